"""The OpenAI Agents SDK over a bare toolkit: a call that needs approval pauses the run, and the
run goes on once a person has answered.

The model is the SDK's own ScriptedModel (``agents.testing``), which makes the calls a model would,
so this runs offline; in a program it is a real one: ``model="gpt-5-mini"``, with
``OPENAI_API_KEY`` set.
"""

from __future__ import annotations

import asyncio

from agents import Agent, RunConfig, Runner
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from notes import Notes, notes_toolkit

import amends_toolkit as at

MODEL = ScriptedModel(
    [
        ModelStep(
            output=[function_call("notes__delete_note", {"text": "buy milk"}, call_id="call_1")]
        ),
        ModelStep(output=[assistant_message("The note about milk is deleted.")]),
    ]
)
OFFLINE = RunConfig(tracing_disabled=True)  # no traces sent to OpenAI


def a_person_says(question: str) -> str:
    print(question, "y")
    return "y"  # input(question) in a program


# --8<-- [start:run]
async def main() -> None:
    notes = Notes()
    toolkit = notes_toolkit(notes)
    agent = Agent(name="notes", model=MODEL, tools=at.adapters.openai_agents.tools(toolkit))
    result = await Runner.run(agent, "Delete the note about milk.", run_config=OFFLINE)
    while result.interruptions:  # calls that need a person's approval paused the run
        state = result.to_state()
        for interruption in result.interruptions:
            if a_person_says(f"Run {interruption.name} {interruption.arguments}? [y/N]") == "y":
                state.approve(interruption)
            else:
                state.reject(
                    interruption, rejection_message=at.adapters.openai_agents.REJECTION_MESSAGE
                )
        result = await Runner.run(agent, state, run_config=OFFLINE)
    print(result.final_output)
    print(notes.notes)


# --8<-- [end:run]


asyncio.run(main())
