"""Media from an MCP tool reach each model API as media, in the API's own form.

The tools are those of the conformance suite's content scenarios, served by the official SDK and
reached through ``at.mcp.http`` and an actor (``media.py``); each request is built by the
official ``openai`` and ``anthropic`` SDKs over a recording transport and checked against their
types, and pydantic-ai runs a real agent loop.
"""

from __future__ import annotations

import base64
import json

import httpx2
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import MessageParam, ToolResultBlockParam
from anthropic.types.tool_result_block_param import Content
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses.response_input_param import FunctionCallOutput
from pydantic import TypeAdapter
from pydantic_ai import Agent, BinaryContent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.adapters import (
    run_anthropic_tool_uses,
    run_openai_function_calls,
    run_openai_tool_calls,
)
from amends_toolkit.adapters.pydantic_ai import ToolkitToolset

from .kit import Recorder
from .media import PNG, WAV, media_toolkit

pytestmark = pytest.mark.anyio


def tool_use(id: str, name: str) -> JsonObject:
    return {"type": "tool_use", "id": id, "name": name, "input": {}}


def no_base64(value: JsonValue, data: str) -> bool:
    return data not in json.dumps(value)


async def test_an_mcp_image_reaches_anthropic_as_an_image_block() -> None:
    reply: JsonObject = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "seen"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    api = Recorder(reply)
    assistant: MessageParam = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "x", "input": {}}],
    }
    async with media_toolkit() as (kit, _):
        answer = await run_anthropic_tool_uses(
            kit,
            [
                tool_use("toolu_1", "test_multiple_content_types"),
                tool_use("toolu_2", "test_audio_content"),
                tool_use("toolu_3", "test_embedded_resource"),
            ],
        )
    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http,
        AsyncAnthropic(api_key="test", base_url="http://anthropic.test", http_client=http) as sdk,
    ):
        await sdk.messages.create(
            model="claude-test",
            max_tokens=10,
            messages=[
                {"role": "user", "content": "go"},
                assistant,
                answer,  # type: ignore[list-item]
            ],
        )
    # MessageParam's content is an Iterable, which pydantic checks only lazily: check each block.
    TypeAdapter(MessageParam).validate_python(answer)
    results = answer["content"]
    assert isinstance(results, list)
    TypeAdapter(list[ToolResultBlockParam]).validate_python(results)
    blocks = TypeAdapter(list[Content])
    for result in results:
        assert isinstance(result, dict)
        assert blocks.validate_python(result["content"]) == result["content"]
    mixed, audio, resource = (result["content"] for result in results)  # type: ignore[call-overload,index]
    source = {"type": "base64", "media_type": "image/png", "data": PNG}
    assert mixed == [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "source": source},
        {"type": "image", "source": source},
    ]
    # The Messages API carries no audio: the model reads that there was some, not its base64.
    assert audio == [
        {"type": "text", "text": "[audio audio/wav, 46 bytes: the Messages API cannot carry it]"}
    ]
    assert isinstance(resource, list)
    [text] = resource
    assert isinstance(text, dict)
    assert isinstance(text["text"], str)
    assert json.loads(text["text"])["resource"]["uri"] == "test://embedded-resource"
    sent = api.requests[0]["messages"]
    assert isinstance(sent, list)
    assert sent[2] == answer


def function_call(call_id: str, name: str) -> JsonObject:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": "{}",
        "status": "completed",
    }


async def test_an_mcp_image_reaches_the_responses_api_as_an_input_image() -> None:
    response: JsonObject = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    api = Recorder(response)
    async with media_toolkit() as (kit, _):
        answers = await run_openai_function_calls(
            kit,
            [function_call("c1", "test_image_content"), function_call("c2", "test_audio_content")],
        )
    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http,
        AsyncOpenAI(api_key="test", base_url="http://openai.test/v1", http_client=http) as sdk,
    ):
        await sdk.responses.create(model="gpt-test", input=answers)  # type: ignore[arg-type]
    adapter = TypeAdapter(FunctionCallOutput)
    assert [adapter.validate_python(answer) for answer in answers] == answers
    image, audio = (answer["output"] for answer in answers)
    assert image == [{"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}]
    assert audio == [
        {
            "type": "input_text",
            "text": "[audio audio/wav, 46 bytes: the Responses API cannot carry it]",
        }
    ]
    assert api.requests[0]["input"] == answers


async def test_chat_completions_carries_the_media_in_a_user_message_after_the_tool_messages() -> (
    None
):
    completion: JsonObject = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "seen"},
            }
        ],
    }
    api = Recorder(completion)
    calls: list[JsonValue] = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "test_multiple_content_types", "arguments": "{}"},
        },
        {"id": "c2", "type": "function", "function": {"name": "test_audio_content"}},
        {"id": "c3", "type": "function", "function": {"name": "test_tool_with_progress"}},
    ]
    async with media_toolkit() as (kit, _):
        messages = await run_openai_tool_calls(kit, calls)  # type: ignore[arg-type]
    assistant: JsonObject = {"role": "assistant", "content": None, "tool_calls": calls}
    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as http,
        AsyncOpenAI(api_key="test", base_url="http://openai.test/v1", http_client=http) as sdk,
    ):
        await sdk.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": "go"}, assistant, *messages],  # type: ignore[list-item]
        )
    adapter = TypeAdapter(ChatCompletionMessageParam)
    for message in messages:
        adapter.validate_python(message)
    mixed, audio, plain, user = messages
    follows = "in the user message after the tool messages"
    assert mixed == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Multiple content types test:\n"
        f"[image image/png, 69 bytes: {follows}]\n"
        f"[image image/png (test://mixed-content-resource), 69 bytes: {follows}]",
    }
    assert audio["content"] == f"[audio audio/wav, 46 bytes: {follows}]"
    assert plain == {"role": "tool", "tool_call_id": "c3", "content": '{"result": "done"}'}
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "From tool call c1:"},
            image,
            {"type": "text", "text": "From tool call c1:"},
            image,
            {"type": "text", "text": "From tool call c2:"},
            {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
        ],
    }
    assert all(no_base64(message, PNG) for message in messages[:3])
    assert api.requests[0]["messages"] == [{"role": "user", "content": "go"}, assistant, *messages]


async def test_pydantic_ai_gives_the_model_an_mcp_image_as_binary_content() -> None:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="test_image_content", args={}, tool_call_id="c1")]
            )
        return ModelResponse(parts=[TextPart("seen")])

    async with media_toolkit() as (kit, _):
        agent = Agent(FunctionModel(model), toolsets=[ToolkitToolset(kit)])
        await agent.run("go")
    parts = [
        part for message in seen[1] if isinstance(message, ModelRequest) for part in message.parts
    ]
    given = [
        item
        for part in parts
        if isinstance(part, ToolReturnPart | UserPromptPart)
        for item in (part.content if isinstance(part.content, list) else [part.content])
    ]
    images = [item for item in given if isinstance(item, BinaryContent)]
    assert [(image.media_type, image.base64) for image in images] == [("image/png", PNG)]
    assert all(PNG not in str(item) for item in given if not isinstance(item, BinaryContent))


PDF = base64.b64encode(b"%PDF-1.4\n1 0 obj <<>> endobj\n%%EOF\n").decode()


class Reports:
    """A source whose ``report`` answers as an MCP tool may: an empty text, then a PDF."""

    name = "reports"

    async def discover(self) -> list[at.ToolDefinition]:
        return [at.ToolDefinition(name="report", description="", input_schema={"type": "object"})]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        resource: JsonObject = {
            "uri": "file:///reports/q3.pdf",
            "mimeType": "application/pdf",
            "blob": PDF,
        }
        return [{"type": "text", "text": ""}, {"type": "resource", "resource": resource}]


async def test_a_pdf_is_a_document_or_a_file_in_each_api() -> None:
    source = Reports()
    kit = at.source_toolkit(source, await source.discover())
    data_url = f"data:application/pdf;base64,{PDF}"

    anthropic = await run_anthropic_tool_uses(kit, [tool_use("t1", "report")])
    TypeAdapter(MessageParam).validate_python(anthropic)
    content = anthropic["content"]
    assert isinstance(content, list)
    [result] = content
    assert isinstance(result, dict)
    # The empty text is left out: the Messages API refuses an empty text block.
    assert result["content"] == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "q3.pdf",
        }
    ]

    [output] = await run_openai_function_calls(kit, [function_call("c1", "report")])
    TypeAdapter(FunctionCallOutput).validate_python(output)
    parts = output["output"]
    assert isinstance(parts, list)
    assert parts[-1] == {"type": "input_file", "file_data": data_url, "filename": "q3.pdf"}
    assert no_base64(parts[:-1], PDF)

    call: JsonValue = {"id": "c1", "type": "function", "function": {"name": "report"}}
    tool, user = await run_openai_tool_calls(kit, [call])  # type: ignore[list-item]
    for message in (tool, user):
        TypeAdapter(ChatCompletionMessageParam).validate_python(message)
    assert user["content"] == [
        {"type": "text", "text": "From tool call c1:"},
        {"type": "file", "file": {"file_data": data_url, "filename": "q3.pdf"}},
    ]
    assert no_base64(tool, PDF)
