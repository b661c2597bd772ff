"""The OpenAI Agents SDK over a Session: the session asks its ``approve``, and the run never
pauses. The model is the SDK's ScriptedModel, as in agents_sdk.py."""

from __future__ import annotations

import asyncio

from agents import Agent, RunConfig, Runner
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from notes import Notes, notes_toolkit

import amends_toolkit as at
from amends_toolkit import JsonObject

MODEL = ScriptedModel(
    [
        ModelStep(
            output=[function_call("notes__delete_note", {"text": "buy milk"}, call_id="call_1")]
        ),
        ModelStep(output=[assistant_message("Nobody let me delete the note about milk.")]),
    ]
)


# --8<-- [start:run]
def ask_a_person(name: str, arguments: JsonObject) -> bool:
    print(f"Run {name} {arguments}? [y/N] n")
    return False  # input(...) == "y" in a program


async def main() -> None:
    notes = Notes()
    async with at.Session(notes_toolkit(notes), approve=ask_a_person) as session:
        tools = at.adapters.openai_agents.tools(session)
        agent = Agent(name="notes", model=MODEL, tools=tools)
        result = await Runner.run(
            agent, "Delete the note about milk.", run_config=RunConfig(tracing_disabled=True)
        )
    print(result.final_output)
    print(notes.notes)


# --8<-- [end:run]


asyncio.run(main())
