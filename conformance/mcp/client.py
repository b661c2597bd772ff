"""The client program the official MCP conformance suite drives: our ``at.mcp.http`` source.

The suite (``@modelcontextprotocol/conformance``) starts a mock server for one scenario and runs
``python client.py <server-url>`` with the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and
its data in ``MCP_CONFORMANCE_CONTEXT`` (JSON). The program does what the scenario asks of a
tools-only client, through the public API a host uses (a runtime, a spawned source, discover and
call), and exits 0 when every step succeeded, 1 when a step failed (the failure is printed).

The source speaks whatever era the mock server speaks: nothing here picks a protocol version.
``run.sh`` runs it (see ``README.md`` beside it).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import TYPE_CHECKING

import anyio
import httpx

import amends_toolkit as at

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from amends_toolkit import JsonObject, JsonValue, ToolDefinition

    Scenario = Callable[[at.ToolSource, Sequence[ToolDefinition], JsonObject], Awaitable[None]]


def _stub(schema: JsonValue) -> JsonValue:
    """A value that fits a simple property schema (the scenarios' tools take plain types)."""
    if not isinstance(schema, dict):
        return "x"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    stubs: dict[str, JsonValue] = {
        "string": "x",
        "integer": 1,
        "number": 1.5,
        "boolean": True,
        "object": {},
        "array": [],
    }
    return stubs.get(kind, "x") if isinstance(kind, str) else "x"


def _stub_input(definition: ToolDefinition) -> JsonObject:
    properties = definition.input_schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {name: _stub(schema) for name, schema in properties.items()}


async def _list_only(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    del source, definitions, context


async def _add_numbers(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    del definitions, context
    print(await source.call("add_numbers", {"a": 5, "b": 3}))


async def _test_reconnection(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    del definitions, context
    print(await source.call("test_reconnection", {}))


async def _every_tool(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    """Call each tool the source kept (a tool it left out must never be called)."""
    del context
    for definition in definitions:
        print(definition.name, await source.call(definition.name, _stub_input(definition)))


async def _input_required(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    """Call each tool; one that asks for input (elicitation) must fail as unsupported.

    The source does not answer ``inputRequests`` (decision 3 of mcp-protocol.md), so the checks
    of echoing and omitting ``requestState`` after input fail by design (see the baseline); the
    others (isolation, an absent ``resultType`` read as complete) must pass.
    """
    del context
    for definition in definitions:
        try:
            print(definition.name, await source.call(definition.name, _stub_input(definition)))
        except at.UnsupportedError as error:
            print(definition.name, "unsupported:", error.message)


async def _context_calls(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    """Make each call the scenario's context lists, with its arguments as they are."""
    del definitions
    calls = context.get("toolCalls")
    if not isinstance(calls, list):
        raise SystemExit("MCP_CONFORMANCE_CONTEXT has no toolCalls list")
    for call in calls:
        if not isinstance(call, dict):
            raise SystemExit("a toolCalls entry is not an object")
        name, arguments = call.get("name"), call.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise SystemExit("a toolCalls entry has no name or no arguments object")
        print(name, await source.call(name, arguments))


async def _echo_schema(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    """Send back the input schema discover gave for the 2020-12 tool, as discover gave it."""
    del context
    focal = next(d for d in definitions if d.name == "json_schema_2020_12_tool")
    print(await source.call("json_schema_echo", {"schema": focal.input_schema}))


_SCENARIOS: dict[str, Scenario] = {
    "initialize": _list_only,
    "tools_call": _add_numbers,
    "sse-retry": _test_reconnection,
    "request-metadata": _every_tool,
    "http-standard-headers": _every_tool,
    "http-custom-headers": _context_calls,
    "http-invalid-tool-headers": _every_tool,
    "json-schema-ref-no-deref": _list_only,
    "json-schema-2020-12-preservation": _echo_schema,
    "sep-2322-client-request-state": _input_required,
}
"""What each scenario asks of a tools-only client after discover; any other scenario (auth/*,
request state, elicitation) only lists, which is all this source does without a host's help."""


async def main(url: str, scenario: str, context: JsonObject) -> int:
    steps = _SCENARIOS.get(scenario, _list_only)
    async with httpx.AsyncClient() as client, at.Runtime() as runtime:
        source = await runtime.spawn(at.mcp.http(name="conformance", url=url, client=client))
        try:
            definitions = await source.discover()
            print("tools:", [d.name for d in definitions])
            await steps(source, definitions, context)
        except at.ToolSourceError as error:
            print(f"{scenario}: {error.reason}: {error.message}", file=sys.stderr)
            return 1
    return 0


def _context() -> JsonObject:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise SystemExit("MCP_CONFORMANCE_CONTEXT is not a JSON object")
    return value


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: client.py <server-url> (the conformance suite appends it)")
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s %(message)s")
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    sys.exit(anyio.run(main, sys.argv[-1], scenario, _context()))
