from __future__ import annotations

import json

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import amends_toolkit as at
from amends_toolkit import JsonObject
from amends_toolkit.adapters.pydantic_ai import ToolkitToolset

from .kit import ECHO_SCHEMA, Source, approve_all, toolkit

pytestmark = pytest.mark.anyio


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def calling(*calls: tuple[str, JsonObject]) -> FunctionModel:
    """A model that makes these calls, then answers with what the tools returned, as JSON."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = returns(messages)
        if not done:
            return ModelResponse(
                parts=[
                    ToolCallPart(tool_name=name, args=args, tool_call_id=f"call_{index}")
                    for index, (name, args) in enumerate(calls)
                ]
            )
        return ModelResponse(parts=[TextPart(json.dumps([part.content for part in done]))])

    return FunctionModel(model)


async def test_the_agent_is_given_every_tool_never_strict() -> None:
    seen: list[AgentInfo] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), toolsets=[ToolkitToolset(toolkit(Source()))])
    await agent.run("go")
    tools = seen[0].function_tools
    assert [tool.name for tool in tools] == [
        "s__echo",
        "s__upper",
        "s__fail",
        "s__wait",
        "s__delete",
    ]
    assert tools[0].parameters_json_schema == ECHO_SCHEMA
    assert tools[0].description == "Echo the text."
    assert all(tool.strict is False for tool in tools)


async def test_an_agent_runs_tools_and_reads_failures_as_results() -> None:
    source = Source()
    agent = Agent(
        calling(
            ("s__echo", {"text": "hi"}),
            ("s__fail", {}),
            ("s__echo", {"text": 1}),
        ),
        toolsets=[ToolkitToolset(toolkit(source))],
    )
    result = await agent.run("go")
    echo, failed, refused = json.loads(result.output)
    assert echo == {"echo": "hi"}
    assert (
        failed == at.CallFailedError(source="s", message="the row is locked").to_failure().to_json()
    )
    assert refused["code"] == "InvalidInputError"
    assert source.calls == [("echo", {"text": "hi"}), ("fail", {})]


async def test_the_test_model_calls_the_tools_it_is_given() -> None:
    source = Source()
    agent = Agent(
        TestModel(call_tools=["s__echo", "s__upper"]),
        toolsets=[ToolkitToolset(toolkit(source))],
    )
    await agent.run("go")
    assert sorted(tool for tool, _ in source.calls) == ["echo", "upper"]
    assert all(isinstance(input, dict) for _, input in source.calls)


async def test_over_a_session_the_session_asks_approval() -> None:
    asked: list[tuple[str, JsonObject]] = []

    async def refuse(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        return False

    source = Source()
    async with at.Session(toolkit(source), approve=refuse) as session:
        agent = Agent(calling(("s__delete", {"id": 1})), toolsets=[ToolkitToolset(session)])
        result = await agent.run("go")
    [denied] = json.loads(result.output)
    assert denied["code"] == "ApprovalDenied"
    assert asked == [("s__delete", {"id": 1})]
    assert source.calls == []


async def test_over_a_session_an_approved_call_runs() -> None:
    source = Source()
    async with at.Session(toolkit(source), approve=approve_all) as session:
        agent = Agent(calling(("s__delete", {})), toolsets=[ToolkitToolset(session)])
        result = await agent.run("go")
    assert json.loads(result.output) == ["deleted"]
    assert source.calls == [("delete", {})]


async def test_over_a_bare_toolkit_pydantic_ai_asks_for_approval() -> None:
    source = Source()
    agent = Agent(
        calling(("s__delete", {}), ("s__upper", {"text": "a"})),
        toolsets=[ToolkitToolset(toolkit(source))],
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("go")
    assert isinstance(first.output, DeferredToolRequests)
    [pending] = first.output.approvals
    assert pending.tool_name == "s__delete"
    assert source.calls == [("upper", {"text": "a"})]

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={pending.tool_call_id: True}),
    )
    assert "deleted" in str(second.output)
    assert source.calls == [("upper", {"text": "a"}), ("delete", {})]
