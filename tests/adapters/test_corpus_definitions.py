"""Every tool definition of the OpenAPI corpus, through the OpenAI and Anthropic adapters,
validated against the official SDKs' request types and their documented name rules; and
converted to the OpenAI Agents SDK's and LangChain's tool types, as each sends them to a model."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from agents.models.chatcmpl_converter import Converter as ChatConverter
from agents.models.openai_responses import Converter as ResponsesConverter
from anthropic.types import ToolParam
from langchain_core.utils.function_calling import convert_to_openai_tool
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import TypeAdapter

import amends_toolkit as at
from amends_toolkit import JsonValue
from amends_toolkit.adapters import (
    anthropic_tools,
    langchain,
    openai_agents,
    openai_responses_tools,
    openai_tools,
)

CORPUS = Path(__file__).parents[1] / "data" / "openapi-corpus"
DOCUMENTS = sorted(
    path.name
    for path in CORPUS.iterdir()
    if path.suffix in (".json", ".yaml")
    and path.name not in ("manifest.json",)
    and "swagger" not in path.name
)
# OpenAI: "a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64";
# Anthropic: tool names ^[a-zA-Z0-9_-]{1,64}$ (at most 128 lately) and property keys
# ^[a-zA-Z0-9_.-]{1,64}$.
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
PROPERTY_KEY = re.compile(r"[a-zA-Z0-9_.-]{1,64}")

CHAT = TypeAdapter(ChatCompletionFunctionToolParam)
RESPONSES = TypeAdapter(FunctionToolParam)
ANTHROPIC = TypeAdapter(ToolParam)


CLIENT = httpx.AsyncClient()


@pytest.fixture(scope="module", autouse=True)
def _close_the_client() -> Iterator[None]:
    yield
    anyio.run(CLIENT.aclose)


@functools.cache
def toolkit(name: str) -> at.Toolkit:
    read = at.openapi.read_operations(at.openapi.read_document(CORPUS / name))
    # Building the source contacts nothing, and nothing here calls a tool.
    source = at.http.make(
        name="api", base_url="https://api.example", operations=read.operations, client=CLIENT
    )
    return at.source_toolkit(source, [operation.definition for operation in read.operations])


def property_keys(schema: JsonValue) -> list[str]:
    keys: list[str] = []
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                keys += properties
            todo += node.values()
        elif isinstance(node, list):
            todo += node
    return keys


def test_every_definition_the_corpus_gives_is_checked() -> None:
    # As tests/protocols/openapi/test_openapi_corpus.py pins them, document by document.
    assert sum(len(toolkit(name).tools) for name in DOCUMENTS) == 1525


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_definition_validates_against_the_sdks_types(name: str) -> None:
    kit = toolkit(name)
    chat, responses, anthropic = (
        openai_tools(kit),
        openai_responses_tools(kit),
        anthropic_tools(kit),
    )
    assert len(chat) == len(responses) == len(anthropic) == len(kit.tools)
    for one, two, three in zip(chat, responses, anthropic, strict=True):
        CHAT.validate_python(one)
        RESPONSES.validate_python(two)
        checked = ANTHROPIC.validate_python(three)
        assert checked["input_schema"]["type"] == "object"
        assert TOOL_NAME.fullmatch(str(three["name"])), three["name"]
        for schema in (one["function"]["parameters"], two["parameters"], three["input_schema"]):  # type: ignore[index,call-overload]
            assert isinstance(schema, dict)
            assert schema["type"] == "object"
            bad = [key for key in property_keys(schema) if not PROPERTY_KEY.fullmatch(key)]
            assert not bad, (three["name"], bad)


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_definition_converts_to_the_openai_agents_sdks_function_tools(name: str) -> None:
    kit = toolkit(name)
    tools = openai_agents.tools(kit)
    assert [tool.name for tool in tools] == list(kit.tools)
    # As the SDK sends them: to the Responses API, and to Chat Completions.
    converted = ResponsesConverter.convert_tools(list(tools), []).tools
    assert converted == openai_responses_tools(kit)
    for tool, one in zip(tools, converted, strict=True):
        RESPONSES.validate_python(one)
        CHAT.validate_python(ChatConverter.tool_to_openai(tool))


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_definition_converts_to_langchain_tools(name: str) -> None:
    kit = toolkit(name)
    tools = langchain.tools(kit)
    # As a chat model's bind_tools sends them (LangChain writes each $ref out in place).
    converted = [convert_to_openai_tool(tool) for tool in tools]
    for one, two in zip(converted, openai_tools(kit), strict=True):
        CHAT.validate_python(one)
        function, ours = one["function"], two["function"]
        assert isinstance(ours, dict)
        assert (function["name"], function["description"]) == (ours["name"], ours["description"])
        schema = function["parameters"]
        assert schema["type"] == "object"
        bad = [key for key in property_keys(schema) if not PROPERTY_KEY.fullmatch(key)]
        assert not bad, (function["name"], bad)
