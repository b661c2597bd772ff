"""Approval in a LangGraph graph: a call that needs it interrupts the graph, which a person's
answer resumes. Each tool call is a task of its own (``Send``), so a resume runs again only it."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Send
from notes import Notes, notes_toolkit
from scripted_chat import scripted

import amends_toolkit as at


# --8<-- [start:graph]
def agent_graph(model: BaseChatModel, tools: list[BaseTool]) -> CompiledStateGraph[Any]:
    named = {tool.name: tool for tool in tools}
    bound = model.bind_tools(tools)

    async def think(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    def act(state: MessagesState) -> list[Send] | str:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return [Send("tool", call) for call in last.tool_calls] or END

    async def tool(call: ToolCall) -> dict[str, list[BaseMessage]]:
        return {"messages": [await named[call["name"]].ainvoke(call)]}

    graph = StateGraph(MessagesState)
    graph.add_node("think", think)
    graph.add_node("tool", tool)  # type: ignore[arg-type]  # Send gives it a call, not the state
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", act, ["tool", END])
    graph.add_edge("tool", "think")
    return graph.compile(checkpointer=InMemorySaver())


def a_person_says(question: str) -> str:
    print(question, "y")
    return "y"  # input(question) in a program


async def main() -> None:
    notes = Notes()
    tools = at.adapters.langchain.tools(notes_toolkit(notes))
    model = scripted(("notes__delete_note", {"text": "buy milk"}), then="Deleted.")  # ChatOpenAI
    graph = agent_graph(model, tools)
    config: RunnableConfig = {"configurable": {"thread_id": "1"}}
    state = await graph.ainvoke({"messages": [HumanMessage("Delete the note about milk.")]}, config)
    while "__interrupt__" in state:
        [asked] = state["__interrupt__"]
        question = f"Run {asked.value['tool']} {asked.value['input']}? [y/N]"
        state = await graph.ainvoke(Command(resume=a_person_says(question) == "y"), config)
    print(state["messages"][-1].content)
    print(notes.notes)


# --8<-- [end:graph]


asyncio.run(main())
