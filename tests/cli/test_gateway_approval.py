"""The gateway asks the client that called (issue 29): ``amends-toolkit serve`` as a subprocess,
the official SDK client with an elicitation callback (both eras) in front, an SDK server behind
that counts the calls that reach it.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Literal

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from conformance._servers import serve

from .gateway import GatewayProcess, eventually

pytestmark = pytest.mark.anyio

MODERN: Final = "2026-07-28"
Mode = Literal["legacy", "2026-07-28"]
MODES: list[Mode] = ["legacy", MODERN]
DELETED: list[str] = []
"""The paths the upstream deleted: what reached it."""


def files_app() -> Any:
    from mcp.server import MCPServer

    server = MCPServer("files")

    @server.tool()
    def delete(path: str) -> str:
        """Delete a file."""
        DELETED.append(path)
        return f"deleted {path}"

    @server.tool()
    def read(path: str) -> str:
        """Read a file."""
        return f"the text of {path}"

    return server.streamable_http_app(stateless_http=False, json_response=False)


def config(directory: Path, port: int, **serve: str) -> Path:
    options = "\n".join(f"{key} = {json.dumps(value)}" for key, value in serve.items())
    written = directory / "gateway.toml"
    written.write_text(
        f"""
[[sources]]
name = "files"
mcp = "http://127.0.0.1:{port}/mcp"

[policy]
allow = ["files__*"]
approve = ["files__delete"]

[serve]
{options}

[auth]
type = "none"
"""
    )
    return written


@pytest.fixture(scope="module")
def upstream() -> Iterator[int]:
    with serve(files_app()) as port:
        yield port


def _gateway(config: Path, **env: str) -> Iterator[GatewayProcess]:
    process = GatewayProcess(config, env={"PYTHONPATH": os.pathsep.join(sys.path), **env})
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def gateway(upstream: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    yield from _gateway(config(tmp_path_factory.mktemp("tools"), upstream))


@pytest.fixture(scope="module")
def coding(upstream: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    written = config(
        tmp_path_factory.mktemp("code"), upstream, presentation="code", code_approval="ask"
    )
    yield from _gateway(written)


@pytest.fixture(autouse=True)
def _nothing_deleted() -> None:
    DELETED.clear()


class Person:
    """An elicitation callback that answers every form with ``answer``, and keeps the forms."""

    def __init__(self, answer: types.ElicitResult) -> None:
        self.answer = answer
        self.forms: list[str] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.forms.append(params.message)
        return self.answer


APPROVE = types.ElicitResult(action="accept", content={"decision": "approve"})
DENY = types.ElicitResult(action="accept", content={"decision": "deny"})


@asynccontextmanager
async def client(
    gateway: GatewayProcess, mode: Mode, person: Person | None = None
) -> AsyncIterator[Client]:
    async with Client(gateway.wait_ready(), mode=mode, elicitation_callback=person) as sdk:
        yield sdk


def text(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_approves_runs_the_tool_once(
    gateway: GatewayProcess, mode: Mode
) -> None:
    before = len(gateway.events("gateway.call"))
    person = Person(APPROVE)
    async with client(gateway, mode, person) as sdk:
        result = await sdk.call_tool("files__delete", {"path": f"{mode}.log"})
    assert not result.is_error, text(result)
    assert f"deleted {mode}.log" in text(result)
    assert [f"{mode}.log"] == DELETED
    [form] = person.forms
    assert "Tool: files__delete\nSource: files\n" in form
    expected = ["approved by client"] if mode == "legacy" else ["asked", "approved by client"]
    await eventually(lambda: len(gateway.events("gateway.call")) >= before + len(expected))
    assert [e["decision"] for e in gateway.events("gateway.call")[before:]] == expected
    # a question asked is no failure of the call
    async with httpx.AsyncClient() as http:
        metrics = await http.get(gateway.base + "/metrics")
    assert 'code="asked"' not in metrics.text


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_denies_does_not_run_the_tool(
    gateway: GatewayProcess, mode: Mode
) -> None:
    async with client(gateway, mode, Person(DENY)) as sdk:
        result = await sdk.call_tool("files__delete", {"path": "kept.log"})
    assert result.is_error
    assert "did not approve" in text(result)
    assert DELETED == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_reads_that_nobody_could_be_asked(
    gateway: GatewayProcess, mode: Mode
) -> None:
    async with client(gateway, mode) as sdk:
        result = await sdk.call_tool("files__delete", {"path": "kept.log"})
        read = await sdk.call_tool("files__read", {"path": "kept.log"})
    assert result.is_error
    assert "nobody could be asked" in text(result)
    assert "the text of kept.log" in text(read)
    assert DELETED == []


async def _again(sdk: Client, state: str, path: str = "a.log") -> types.CallToolResult:
    answered = await sdk.session.call_tool(
        "files__delete",
        {"path": path},
        input_responses={"approval": APPROVE},
        request_state=state,
        allow_input_required=True,
    )
    assert isinstance(answered, types.CallToolResult)
    return answered


async def test_a_replayed_or_edited_request_state_is_refused(gateway: GatewayProcess) -> None:
    refusals: list[str] = []
    async with client(gateway, MODERN, Person(APPROVE)) as sdk:
        first = await sdk.session.call_tool(
            "files__delete", {"path": "a.log"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state is not None
        state = first.request_state
        payload, _, signature = state.partition(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        claims["a"] = "0" * 32  # the digest of another input
        edited = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        for forged in (f"{edited}.{signature}", state + "A"):
            try:
                await _again(sdk, forged)
            except MCPError as error:
                refusals.append(error.error.message)
        assert DELETED == []
        assert "deleted a.log" in text(await _again(sdk, state))
        try:
            await _again(sdk, state)
        except MCPError as error:
            refusals.append(error.error.message)
    assert [r.split(":")[0] for r in refusals] == [
        "The requestState was changed",
        "The requestState was changed",
        "The requestState was answered already",
    ]
    assert DELETED == ["a.log"]


async def test_with_an_approval_key_a_state_is_answered_after_a_restart(
    upstream: int, tmp_path: Path
) -> None:
    written = config(tmp_path, upstream, approval_key="${APPROVAL_KEY}")
    key = {"APPROVAL_KEY": "k" * 40}
    for gateway in _gateway(written, **key):
        async with client(gateway, MODERN, Person(APPROVE)) as sdk:
            first = await sdk.session.call_tool(
                "files__delete", {"path": "a.log"}, allow_input_required=True
            )
    assert isinstance(first, types.InputRequiredResult)
    assert first.request_state is not None
    for gateway in _gateway(written, APPROVAL_KEY="j" * 40):
        async with client(gateway, MODERN, Person(APPROVE)) as sdk:
            with pytest.raises(MCPError, match="was changed"):
                await _again(sdk, first.request_state)
    for gateway in _gateway(written, **key):
        async with client(gateway, MODERN, Person(APPROVE)) as sdk:
            assert "deleted a.log" in text(await _again(sdk, first.request_state))
    assert DELETED == ["a.log"]


CODE = """
done = []
for path in ["old.log", "keep.txt"]:
    done.append(await tools.files__delete({"path": path}))
return done
"""


@pytest.mark.parametrize("mode", MODES)
async def test_code_mode_pauses_asks_the_client_and_resumes(
    coding: GatewayProcess, mode: Mode
) -> None:
    person = Person(APPROVE)
    async with client(coding, mode, person) as sdk:
        listed = await sdk.list_tools()
        result = await sdk.call_tool("execute", {"code": CODE})
    assert [tool.name for tool in listed.tools] == ["execute"]
    assert not result.is_error, text(result)
    assert json.loads(text(result)) == {
        "result": [{"result": "deleted old.log"}, {"result": "deleted keep.txt"}],
        "logs": [],
    }
    assert DELETED == ["old.log", "keep.txt"]
    assert len(person.forms) == 2
    assert "Tool: files__delete\nSource: called from code, in execute\n" in person.forms[0]
    assert 'Input: {"path": "keep.txt"}' in person.forms[1]


@pytest.mark.parametrize("mode", MODES)
async def test_code_mode_reads_a_denial_and_goes_on(coding: GatewayProcess, mode: Mode) -> None:
    code = (
        "try:\n"
        '    await tools.files__delete({"path": "old.log"})\n'
        "except ToolError as error:\n"
        '    return str(error).split(":")[0]'
    )
    async with client(coding, mode, Person(DENY)) as sdk:
        result = await sdk.call_tool("execute", {"code": code})
    assert json.loads(text(result))["result"] == "ApprovalDenied"
    assert DELETED == []


async def test_a_paused_runs_state_is_answered_once(coding: GatewayProcess) -> None:
    async with client(coding, MODERN, Person(APPROVE)) as sdk:
        first = await sdk.session.call_tool("execute", {"code": CODE}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state is not None
        second = await sdk.session.call_tool(
            "execute",
            {"code": CODE},
            input_responses={"approval": APPROVE},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(second, types.InputRequiredResult)  # the second file's question
        with pytest.raises(MCPError, match="answered already"):
            await sdk.session.call_tool(
                "execute",
                {"code": CODE},
                input_responses={"approval": APPROVE},
                request_state=first.request_state,
                allow_input_required=True,
            )
        with pytest.raises(MCPError, match="another call"):
            await sdk.session.call_tool(
                "execute",
                {"code": "return 1"},
                input_responses={"approval": APPROVE},
                request_state=second.request_state,
                allow_input_required=True,
            )
    assert DELETED == ["old.log"]
