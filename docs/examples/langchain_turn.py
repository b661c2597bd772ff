"""A LangChain tool-calling turn: the model calls a tool, reads its answer, and answers."""

from __future__ import annotations

import asyncio

from langchain_core.messages import BaseMessage, HumanMessage
from notes import Notes, notes_toolkit
from scripted_chat import scripted

import amends_toolkit as at


# --8<-- [start:run]
async def main() -> None:
    tools = {tool.name: tool for tool in at.adapters.langchain.tools(notes_toolkit(Notes()))}
    model = scripted(("notes__list_notes", {}), then="You have two notes.")  # ChatOpenAI(...)
    bound = model.bind_tools(list(tools.values()))
    messages: list[BaseMessage] = [HumanMessage("What are my notes?")]
    while (message := await bound.ainvoke(messages)).tool_calls:
        messages.append(message)
        messages += [await tools[call["name"]].ainvoke(call) for call in message.tool_calls]
    print(messages[-1].content)  # what the tool answered, as the model read it
    print(message.content)


# --8<-- [end:run]


asyncio.run(main())
