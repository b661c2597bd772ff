"""The client program the official MCP conformance suite drives: our ``at.mcp.http`` source.

The suite (``@modelcontextprotocol/conformance``) starts a mock server for one scenario and runs
``python client.py <server-url>`` with the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` and
its data in ``MCP_CONFORMANCE_CONTEXT`` (JSON). The program does what the scenario asks of a
tools-only client, through the public API a host uses (a runtime, a spawned source, discover and
call), and exits 0 when every step succeeded, 1 when a step failed (the failure is printed).

The source speaks whatever era the mock server speaks: nothing here picks a protocol version.
For an ``auth/*`` scenario the source's client is given the official SDK's OAuth provider,
exactly as ``amends-toolkit serve`` gives it to an ``auth = "oauth"`` source (through
:func:`amends_toolkit.cli._oauth.oauth_provider`): the provider authorizes, the source never sees
a token. The authorization step a person would take in a browser is taken by fetching the
authorization URL and reading the code from its redirect.

``run.sh`` runs it (see ``README.md`` beside it).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
from mcp.shared.auth import AuthorizationCodeResult

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


async def _first_tool(
    source: at.ToolSource, definitions: Sequence[ToolDefinition], context: JsonObject
) -> None:
    """Call the first tool (an authorized call; a scenario may ask for more scope on it)."""
    del context
    if definitions:
        first = definitions[0]
        try:
            print(first.name, await source.call(first.name, _stub_input(first)))
        except at.CallFailedError as error:
            print(first.name, "failed:", error.message)


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
"""What each scenario asks of a tools-only client after discover; an ``auth/*`` scenario lists
and calls the first tool; any other (elicitation) only lists."""

REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


class _Browser:
    """What a person's browser does: open the authorization URL, come back with the code."""

    def __init__(self) -> None:
        self._answer: AuthorizationCodeResult | None = None

    async def open(self, url: str) -> None:
        async with httpx.AsyncClient() as client:
            response = await client.get(url, follow_redirects=False)
        query = parse_qs(urlsplit(response.headers.get("location", "")).query)
        if "code" not in query:
            raise SystemExit(f"the authorization server gave no code (HTTP {response.status_code})")
        self._answer = AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    async def come_back(self) -> AuthorizationCodeResult:
        if self._answer is None:
            raise SystemExit("no authorization code: the browser step did not run")
        answer, self._answer = self._answer, None
        return answer


async def _client(
    stack: AsyncExitStack, url: str, scenario: str, context: JsonObject
) -> httpx.AsyncClient | httpx2.AsyncClient:
    """The host's client: plain, or for ``auth/*`` with the SDK's OAuth provider as its auth."""
    if not scenario.startswith("auth/"):
        return await stack.enter_async_context(httpx.AsyncClient())
    from mcp.shared.auth import OAuthClientInformationFull
    from pydantic import AnyUrl

    from amends_toolkit.cli._oauth import MemoryTokenStorage, oauth_provider

    storage = MemoryTokenStorage()
    client_id, secret = context.get("client_id"), context.get("client_secret")
    if isinstance(client_id, str):  # a client registered beforehand (pre-registration)
        await storage.set_client_info(
            OAuthClientInformationFull(
                client_id=client_id,
                client_secret=secret if isinstance(secret, str) else None,
                redirect_uris=[AnyUrl(REDIRECT_URI)],
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
            )
        )
    browser = _Browser()
    auth = oauth_provider(
        server_url=url,
        storage=storage,
        redirect_uri=REDIRECT_URI,
        redirect_handler=browser.open,
        callback_handler=browser.come_back,
        client_name="amends-toolkit-conformance",
        client_metadata_url=CLIENT_METADATA_URL,
    )
    return await stack.enter_async_context(httpx2.AsyncClient(auth=auth))


async def main(url: str, scenario: str, context: JsonObject) -> int:
    steps = _SCENARIOS.get(scenario, _first_tool if scenario.startswith("auth/") else _list_only)
    async with AsyncExitStack() as stack:
        client = await _client(stack, url, scenario, context)
        runtime = await stack.enter_async_context(at.Runtime())
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
