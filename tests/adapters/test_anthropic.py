from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import MessageParam, ToolParam, ToolResultBlockParam
from pydantic import TypeAdapter

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.adapters import anthropic_tools, run_anthropic_tool_uses

from .kit import ECHO_SCHEMA, Recorder, Source, approve_all, toolkit

pytestmark = pytest.mark.anyio


def tool_use(use_id: str, name: str, input: JsonValue) -> JsonObject:
    return {"type": "tool_use", "id": use_id, "name": name, "input": input}


def message(content: list[JsonObject]) -> JsonObject:
    blocks: list[JsonValue] = [*content]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": blocks,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def test_tools_carry_their_input_schema() -> None:
    tools = anthropic_tools(toolkit(Source()))
    assert tools[0] == {
        "name": "s__echo",
        "description": "Echo the text.",
        "input_schema": ECHO_SCHEMA,
    }
    assert len(tools) == 5
    adapter = TypeAdapter(ToolParam)
    for tool in tools:
        assert adapter.validate_python(tool) == tool


async def test_a_turn_through_the_sdk_runs_the_tool_uses_and_answers_them() -> None:
    source = Source()
    kit = toolkit(source)
    api = Recorder(
        message(
            [
                {"type": "text", "text": "Let me look."},
                tool_use("toolu_1", "s__echo", {"text": "hi"}),
                tool_use("toolu_2", "s__upper", {"text": "hi"}),
                tool_use("toolu_3", "s__fail", {}),
                tool_use("toolu_4", "s__echo", {"text": 3}),
            ]
        ),
        message([{"type": "text", "text": "done"}]),
    )
    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http,
        AsyncAnthropic(
            api_key="test", base_url="http://anthropic.test", http_client=http
        ) as client,
        at.Session(kit, approve=approve_all) as session,
    ):
        first = await client.messages.create(
            model="claude-test",
            max_tokens=100,
            messages=[{"role": "user", "content": "go"}],
            tools=anthropic_tools(kit),  # type: ignore[arg-type]
        )
        answer = await run_anthropic_tool_uses(session, first.content)
        await client.messages.create(
            model="claude-test",
            max_tokens=100,
            messages=[
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": first.content},
                answer,  # type: ignore[list-item]
            ],
        )
    assert api.requests[0]["tools"] == anthropic_tools(kit)
    failed = at.CallFailedError(source="s", message="the row is locked").to_failure().to_json()
    assert answer["role"] == "user"
    content = answer["content"]
    assert isinstance(content, list)
    assert content[:3] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": '{"echo": "hi"}',
            "is_error": False,
        },
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "HI", "is_error": False},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_3",
            "content": json.dumps(failed),
            "is_error": True,
        },
    ]
    refused = content[3]
    assert isinstance(refused, dict)
    assert refused["is_error"] is True
    refusal = at.Failure.from_json(json.loads(str(refused["content"])))
    assert refusal is not None
    assert refusal.code == "InvalidInputError"
    # MessageParam's content is an Iterable, which pydantic checks only lazily: check each block.
    TypeAdapter(MessageParam).validate_python(answer)
    blocks = TypeAdapter(list[ToolResultBlockParam])
    assert blocks.validate_python(content) == content
    messages = api.requests[1]["messages"]
    assert isinstance(messages, list)
    assert messages[2] == answer
    assert source.calls == [("echo", {"text": "hi"}), ("upper", {"text": "hi"}), ("fail", {})]


async def test_tool_uses_run_concurrently() -> None:
    source = Source()
    answers: list[JsonObject] = []

    async def run() -> None:
        uses = [tool_use(f"t{i}", "s__wait", {}) for i in range(3)]
        answers.append(await run_anthropic_tool_uses(toolkit(source), uses))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        assert source.waiting == 3
        source.release.set()
    content = answers[0]["content"]
    assert isinstance(content, list)
    assert [block["content"] for block in content] == ["released"] * 3  # type: ignore[call-overload,index]


async def test_a_message_without_tool_uses_gives_an_empty_answer() -> None:
    answer = await run_anthropic_tool_uses(toolkit(Source()), [{"type": "text", "text": "hi"}])
    assert answer == {"role": "user", "content": []}


async def test_a_tool_use_without_a_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs a string 'name'"):
        await run_anthropic_tool_uses(
            toolkit(Source()), [{"type": "tool_use", "id": "t", "input": {}}]
        )


async def test_something_that_is_no_block_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="expected a dict or an SDK model"):
        await run_anthropic_tool_uses(toolkit(Source()), ["tool_use"])  # type: ignore[list-item]
