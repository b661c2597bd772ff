"""LangChain's tool calling and a LangGraph graph over a toolkit, with LangChain's own fake chat
model (no network), the calls counted at the source."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Send

import amends_toolkit as at
from amends_toolkit import JsonObject
from amends_toolkit.adapters import langchain
from amends_toolkit.runtime import DENIED

from .kit import DEFINITIONS, ECHO_SCHEMA, Source, approve_all, toolkit
from .media import PNG, WAV, media_toolkit
from .test_media import PDF, Reports

pytestmark = pytest.mark.anyio


class ToolCallingModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering from a script, that takes tools as a real one
    does (``bind_tools``) and keeps them as the OpenAI API would be sent them."""

    bound: list[dict[str, Any]] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound = [convert_to_openai_tool(tool) for tool in tools]
        return self


def calls(*made: tuple[str, JsonObject]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            ToolCall(name=name, args=args, id=f"call_{name}_{index}")
            for index, (name, args) in enumerate(made)
        ],
    )


def scripted(*turns: AIMessage) -> ToolCallingModel:
    return ToolCallingModel(messages=iter([*turns, AIMessage(content="done")]))


def by_name(tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in tools}


def test_every_tool_is_a_langchain_tool_a_chat_model_is_given_as_it_is() -> None:
    tools = langchain.tools(toolkit(Source()))
    assert all(isinstance(tool, BaseTool) for tool in tools)
    model = scripted()
    model.bind_tools(tools)
    assert [tool["function"]["name"] for tool in model.bound] == [
        "s__echo",
        "s__upper",
        "s__fail",
        "s__wait",
        "s__delete",
    ]
    echo = model.bound[0]["function"]
    assert echo["parameters"] == ECHO_SCHEMA
    assert echo["description"] == "Echo the text."


async def test_a_tool_calling_turn_runs_the_calls_and_reads_failures_as_error_results() -> None:
    source = Source()
    tools = by_name(langchain.tools(toolkit(source)))
    model = scripted(calls(("s__echo", {"text": "hi"}), ("s__fail", {}), ("s__echo", {"text": 1})))
    bound = model.bind_tools(list(tools.values()))
    messages: list[BaseMessage] = [HumanMessage("go")]
    while True:
        message = await bound.ainvoke(messages)
        messages.append(message)
        assert isinstance(message, AIMessage)
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append(await tools[call["name"]].ainvoke(call))
    echo, failed, refused = (m for m in messages if isinstance(m, ToolMessage))
    assert (echo.content, echo.status) == ('{"echo": "hi"}', "success")
    assert failed.status == refused.status == "error"
    assert json.loads(str(failed.content)) == (
        at.CallFailedError(source="s", message="the row is locked").to_failure().to_json()
    )
    assert json.loads(str(refused.content))["code"] == "InvalidInputError"
    assert source.calls == [("echo", {"text": "hi"}), ("fail", {})]


def agent_graph(model: ToolCallingModel, tools: list[BaseTool]) -> CompiledStateGraph[Any]:
    """A model and its tools in a LangGraph graph, each tool call a task of its own (``Send``),
    so that a call's interrupt runs again only that call when the graph resumes."""
    named = by_name(tools)
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


def thread() -> Any:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def results(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.name or "": m for m in state["messages"] if isinstance(m, ToolMessage)}


async def test_a_graph_interrupts_for_an_approval_and_resumed_runs_the_call_once() -> None:
    source = Source()
    graph = agent_graph(
        scripted(calls(("s__echo", {"text": "hi"}), ("s__delete", {"id": 7}))),
        langchain.tools(toolkit(source)),
    )
    config = thread()
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    [asked] = paused["__interrupt__"]
    assert asked.value == {"tool": "s__delete", "input": {"id": 7}}
    assert source.calls == [("echo", {"text": "hi"})]

    done = await graph.ainvoke(Command(resume=True), config)
    assert "__interrupt__" not in done
    assert source.calls == [("echo", {"text": "hi"}), ("delete", {"id": 7})]
    assert results(done)["s__delete"].content == "deleted"
    assert done["messages"][-1].content == "done"


async def test_a_graph_resumed_with_a_refusal_never_runs_the_call() -> None:
    source = Source()
    graph = agent_graph(scripted(calls(("s__delete", {}))), langchain.tools(toolkit(source)))
    config = thread()
    await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    done = await graph.ainvoke(Command(resume=False), config)
    assert source.calls == []
    denied = results(done)["s__delete"]
    assert denied.status == "error"
    assert json.loads(str(denied.content)) == DENIED.to_json()


async def test_a_graph_resumed_with_no_yes_or_no_is_the_hosts_mistake_named() -> None:
    source = Source()
    graph = agent_graph(scripted(calls(("s__delete", {}))), langchain.tools(toolkit(source)))
    config = thread()
    await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    with pytest.raises(TypeError, match=r"Command\(resume=True\)"):
        await graph.ainvoke(Command(resume="yes"), config)
    assert source.calls == []


async def test_a_call_that_needs_approval_outside_a_graph_says_what_asks() -> None:
    source = Source()
    delete = by_name(langchain.tools(toolkit(source)))["s__delete"]
    with pytest.raises(RuntimeError, match="checkpointer, or give tools\\(\\) a Session"):
        await delete.ainvoke({})
    assert source.calls == []


async def test_over_a_session_the_session_asks_and_nothing_interrupts() -> None:
    asked: list[tuple[str, JsonObject]] = []

    def refuse(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        return False

    source = Source()
    async with at.Session(toolkit(source), approve=refuse) as session:
        graph = agent_graph(scripted(calls(("s__delete", {"id": 1}))), langchain.tools(session))
        done = await graph.ainvoke({"messages": [HumanMessage("go")]}, thread())
    assert "__interrupt__" not in done
    assert asked == [("s__delete", {"id": 1})]
    assert source.calls == []
    assert json.loads(str(results(done)["s__delete"].content)) == DENIED.to_json()


async def test_over_a_session_an_approved_call_runs() -> None:
    source = Source()
    async with at.Session(toolkit(source), approve=approve_all) as session:
        delete = by_name(langchain.tools(session))["s__delete"]
        assert await delete.ainvoke({}) == "deleted"
    assert source.calls == [("delete", {})]


def test_a_tool_runs_asynchronously_only() -> None:
    source = Source()
    echo = by_name(langchain.tools(toolkit(source)))["s__echo"]
    with pytest.raises(NotImplementedError, match="ainvoke"):
        echo.invoke({"text": "hi"})
    assert source.calls == []


async def test_any_property_name_reaches_the_source_even_langchains_own() -> None:
    schema: JsonObject = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in ("self", "config", "run_manager")},
    }
    source = Source()
    definition = at.ToolDefinition(name="upper", description="", input_schema=schema)
    [tool] = langchain.tools(at.source_toolkit(source, [definition]))
    await tool.ainvoke({"self": 1, "config": 2, "run_manager": 3})
    assert source.calls == [("upper", {"self": 1, "config": 2, "run_manager": 3})]


async def test_tool_search_interrupts_for_the_found_tools_approval() -> None:
    source = Source()
    graph = agent_graph(
        scripted(
            calls(("tool_search", {"query": "delete"})),
            calls(
                ("tool_call", {"name": "s__echo", "input": {"text": "hi"}}),
                ("tool_call", {"name": "s__delete", "input": {}}),
            ),
        ),
        langchain.tools(at.tool_search(toolkit(source))),
    )
    config = thread()
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    [asked] = paused["__interrupt__"]
    assert asked.value == {"tool": "tool_call", "input": {"name": "s__delete", "input": {}}}
    assert source.calls == [("echo", {"text": "hi"})]
    await graph.ainvoke(Command(resume=True), config)
    assert source.calls == [("echo", {"text": "hi"}), ("delete", {})]


async def test_code_mode_runs_code_and_its_tool_needing_approval_interrupts_beside_it() -> None:
    source = Source()
    coded = at.code_mode(toolkit(source), at.InProcessRuntime())
    code = "return (await tools.s__echo({'text': 'a'}))['echo']"
    graph = agent_graph(
        scripted(calls(("execute", {"code": code}), ("s__delete", {}))),
        langchain.tools(coded),
    )
    config = thread()
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    assert json.loads(str(results(paused)["execute"].content)) == {"result": "a", "logs": []}
    assert [asked.value["tool"] for asked in paused["__interrupt__"]] == ["s__delete"]
    await graph.ainvoke(Command(resume=True), config)
    assert source.calls == [("echo", {"text": "a"}), ("delete", {})]


async def test_media_are_langchains_standard_image_and_file_blocks() -> None:
    reports = Reports()
    async with media_toolkit() as (kit, _):
        both = at.presentations.merge(kit, at.source_toolkit(reports, await reports.discover()))
        named = by_name(langchain.tools(both))
        image, audio, pdf = [
            await named[name].ainvoke(ToolCall(name=name, args={}, id=name, type="tool_call"))
            for name in ("test_image_content", "test_audio_content", "report")
        ]
    assert image.content == [{"type": "image", "base64": PNG, "mime_type": "image/png"}]
    assert audio.content == [
        {
            "type": "text",
            "text": "[audio audio/wav, 46 bytes: a LangChain tool message cannot carry it]",
        }
    ]
    assert pdf.content[-1] == {
        "type": "file",
        "base64": PDF,
        "mime_type": "application/pdf",
        "extras": {"filename": "q3.pdf"},
    }
    assert PDF not in json.dumps(pdf.content[:-1])
    assert WAV not in json.dumps(audio.content)


async def test_an_input_the_schema_refuses_fails_without_asking_anyone() -> None:
    source = Source()
    echo_asks = at.assemble(
        [at.Member(source, DEFINITIONS)],
        lambda _, d: "approve" if d.name == "echo" else "allow",
    )
    echo = by_name(langchain.tools(echo_asks))["s__echo"]
    refused = await echo.ainvoke({"text": 1})
    assert json.loads(refused)["code"] == "InvalidInputError"
    assert source.calls == []


async def test_cancelling_the_graph_cancels_the_call_and_gives_no_result() -> None:
    source = Source()
    graph = agent_graph(scripted(calls(("s__wait", {}))), langchain.tools(toolkit(source)))
    ended: list[Any] = []

    async def turn() -> None:
        ended.append(await graph.ainvoke({"messages": [HumanMessage("go")]}, thread()))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(turn)
        while not source.waiting:
            await anyio.wait_all_tasks_blocked()
        tasks.cancel_scope.cancel()
    assert ended == []
    assert source.calls == [("wait", {})]


async def test_a_property_name_the_apis_refuse_is_given_back_to_the_source() -> None:
    source = Source()
    schema: JsonObject = {"type": "object", "properties": {"filter[id]": {"type": "string"}}}
    definition = at.ToolDefinition(name="upper", description="", input_schema=schema)
    [tool] = langchain.tools(at.source_toolkit(source, [definition]))
    assert list(convert_to_openai_tool(tool)["function"]["parameters"]["properties"]) == [
        "filter_id_"
    ]
    assert await tool.ainvoke({"filter_id_": "7"}) == ""
    assert source.calls == [("upper", {"filter[id]": "7"})]
