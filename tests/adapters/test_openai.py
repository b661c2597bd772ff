from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolMessageParam
from openai.types.responses import FunctionToolParam
from openai.types.responses.response_input_param import FunctionCallOutput
from pydantic import TypeAdapter

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.adapters import (
    openai_responses_tools,
    openai_tools,
    run_openai_function_calls,
    run_openai_tool_calls,
)

from .kit import Recorder, Source, approve_all, toolkit

pytestmark = pytest.mark.anyio


def completion(tool_calls: list[JsonObject]) -> JsonObject:
    calls: list[JsonValue] = [*tool_calls]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": calls},
            }
        ],
    }


def function_call(call_id: str, name: str, arguments: str) -> JsonObject:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_chat_tools_are_function_tools_never_strict() -> None:
    tools = openai_tools(toolkit(Source()))
    assert [tool["function"]["name"] for tool in tools] == [  # type: ignore[call-overload,index]
        "s__echo",
        "s__upper",
        "s__fail",
        "s__wait",
        "s__delete",
    ]
    assert tools[0] == {
        "type": "function",
        "function": {
            "name": "s__echo",
            "description": "Echo the text.",
            "parameters": toolkit(Source()).tools["s__echo"].input_schema,
            "strict": False,
        },
    }
    adapter = TypeAdapter(ChatCompletionFunctionToolParam)
    for tool in tools:
        assert adapter.validate_python(tool) == tool


def test_responses_tools_are_function_tools_never_strict() -> None:
    tools = openai_responses_tools(toolkit(Source()))
    assert tools[1] == {
        "type": "function",
        "name": "s__upper",
        "description": "Shout.",
        "parameters": {"type": "object"},
        "strict": False,
    }
    adapter = TypeAdapter(FunctionToolParam)
    for tool in tools:
        assert adapter.validate_python(tool) == tool


async def test_a_chat_turn_through_the_sdk_runs_the_calls_and_answers_them() -> None:
    source = Source()
    kit = toolkit(source)
    api = Recorder(
        completion(
            [
                function_call("call_1", "s__echo", '{"text": "hi"}'),
                function_call("call_2", "s__upper", '{"text": "hi"}'),
                function_call("call_3", "s__fail", "{}"),
            ]
        ),
        completion([]),
    )
    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http,
        AsyncOpenAI(api_key="test", base_url="http://openai.test/v1", http_client=http) as client,
        at.Session(kit, approve=approve_all) as session,
    ):
        first = await client.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": "go"}],
            tools=openai_tools(kit),  # type: ignore[arg-type]
        )
        message = first.choices[0].message
        answers = await run_openai_tool_calls(session, message.tool_calls)
        await client.chat.completions.create(
            model="gpt-test",
            messages=[
                {"role": "user", "content": "go"},
                message.model_dump(exclude_none=True),  # type: ignore[list-item]
                *answers,  # type: ignore[list-item]
            ],
        )
    assert api.requests[0]["tools"] == openai_tools(kit)
    assert answers == [
        {"role": "tool", "tool_call_id": "call_1", "content": '{"echo": "hi"}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "HI"},
        {
            "role": "tool",
            "tool_call_id": "call_3",
            "content": json.dumps(
                at.CallFailedError(source="s", message="the row is locked").to_failure().to_json()
            ),
        },
    ]
    adapter = TypeAdapter(ChatCompletionToolMessageParam)
    for answer in answers:
        assert adapter.validate_python(answer) == answer
    messages = api.requests[1]["messages"]
    assert isinstance(messages, list)
    assert messages[2:] == answers
    assert source.calls == [("echo", {"text": "hi"}), ("upper", {"text": "hi"}), ("fail", {})]


async def test_arguments_that_are_no_json_are_answered_and_never_run() -> None:
    source = Source()
    [answer] = await run_openai_tool_calls(
        toolkit(source), [function_call("call_1", "s__echo", '{"text": ')]
    )
    failure = at.Failure.from_json(json.loads(str(answer["content"])))
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert failure.message.startswith("The arguments are not valid JSON")
    assert source.calls == []


async def test_arguments_the_schema_refuses_are_answered_and_never_run() -> None:
    source = Source()
    [answer] = await run_openai_tool_calls(
        toolkit(source), [function_call("c", "s__echo", '{"text": 1, "more": true}')]
    )
    failure = at.Failure.from_json(json.loads(str(answer["content"])))
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert source.calls == []


async def test_empty_arguments_are_an_empty_object() -> None:
    source = Source()
    await run_openai_tool_calls(toolkit(source), [function_call("c", "s__upper", "")])
    assert source.calls == [("upper", {})]


async def test_a_call_of_a_kind_never_offered_is_answered_as_not_found() -> None:
    custom: JsonObject = {"id": "c", "type": "custom", "custom": {"name": "x", "input": "y"}}
    [answer] = await run_openai_tool_calls(toolkit(Source()), [custom])
    assert answer["tool_call_id"] == "c"
    failure = at.Failure.from_json(json.loads(str(answer["content"])))
    assert failure is not None
    assert failure.code == "NotFoundError"


async def test_no_tool_calls_give_no_messages() -> None:
    assert await run_openai_tool_calls(toolkit(Source()), None) == []


async def test_a_call_without_an_id_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs a string 'id'"):
        await run_openai_tool_calls(
            toolkit(Source()), [{"type": "function", "function": {"name": "s__upper"}}]
        )


async def test_calls_of_one_message_run_concurrently() -> None:
    source = Source()
    results: list[list[JsonObject]] = []

    async def run() -> None:
        calls = [function_call(f"c{i}", "s__wait", "{}") for i in range(2)]
        results.append(await run_openai_tool_calls(toolkit(source), calls))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        assert source.waiting == 2
        source.release.set()
    assert [answer["content"] for answer in results[0]] == ["released", "released"]


async def test_a_session_asks_approval_for_a_call_a_model_makes() -> None:
    asked: list[str] = []

    def refuse(name: str, input: JsonObject) -> bool:
        asked.append(name)
        return False

    source = Source()
    async with at.Session(toolkit(source), approve=refuse) as session:
        [answer] = await run_openai_tool_calls(session, [function_call("c", "s__delete", "{}")])
    failure = at.Failure.from_json(json.loads(str(answer["content"])))
    assert failure is not None
    assert failure.code == "ApprovalDenied"
    assert asked == ["s__delete"]
    assert source.calls == []


async def test_a_responses_turn_through_the_sdk_runs_the_calls_and_answers_them() -> None:
    source = Source()
    kit = toolkit(source)
    output: list[JsonValue] = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "s__echo",
            "arguments": '{"text": "hi"}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_2",
            "name": "s__nothing",
            "arguments": "{}",
            "status": "completed",
        },
    ]
    response: JsonObject = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    api = Recorder(response, {**response, "output": []})
    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http,
        AsyncOpenAI(api_key="test", base_url="http://openai.test/v1", http_client=http) as client,
        at.Session(kit, approve=approve_all) as session,
    ):
        first = await client.responses.create(
            model="gpt-test",
            input="go",
            tools=openai_responses_tools(kit),  # type: ignore[arg-type]
        )
        answers = await run_openai_function_calls(session, first.output)
        await client.responses.create(
            model="gpt-test",
            previous_response_id=first.id,
            input=answers,  # type: ignore[arg-type]
        )
    assert api.requests[0]["tools"] == openai_responses_tools(kit)
    not_found = at.NotFoundError(source="toolkit").to_failure().to_json()
    assert answers == [
        {"type": "function_call_output", "call_id": "call_1", "output": '{"echo": "hi"}'},
        {"type": "function_call_output", "call_id": "call_2", "output": json.dumps(not_found)},
    ]
    adapter = TypeAdapter(FunctionCallOutput)
    for answer in answers:
        assert adapter.validate_python(answer) == answer
    assert api.requests[1]["input"] == answers
    assert source.calls == [("echo", {"text": "hi"})]
