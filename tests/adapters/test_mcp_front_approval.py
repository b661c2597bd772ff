"""The front asks the client that called (``at.adapters.ask_client``), over real HTTP (uvicorn)
with the official SDK client: by ``elicitation/create`` in a session, and by an
``input_required`` round trip with a signed ``requestState`` in 2026-07-28.

The attacks come first: a state edited, another caller's, another input's, replayed, huge, or
nested; an input that tries to forge the form's text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._peer import MAX_SHOWN
from amends_toolkit.adapters import mcp_front
from amends_toolkit.adapters._asking import MAX_STATE_LENGTH, ApprovalStates, StateRefused
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit
from conformance._servers import serve

pytestmark = pytest.mark.anyio

MODERN: Final = "2026-07-28"
Mode = Literal["legacy", "2026-07-28"]
MODES: list[Mode] = ["legacy", MODERN]


class _ByHeader:
    """Callers named by ``x-who`` (a test's authenticator; the gateway's are keys and OAuth)."""

    async def authenticate(self, request: Request) -> at.adapters.Caller:
        who = request.headers.get("x-who", "nobody")
        return at.adapters.Caller(id=f"key:{who}", name=who, kind="keys")

    def routes(self) -> Sequence[Any]:
        return ()


RAN: list[JsonObject] = []


async def _delete(input: JsonObject) -> JsonValue:
    RAN.append(input)
    return f"deleted {input['path']}"


DELETE = Tool(
    name="files__delete",
    description="Delete a file.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    needs_approval=True,
)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    front = at.adapters.mcp_server(
        Toolkit.from_entries([ToolEntry(tool=DELETE, handler=_delete)]),
        name="files",
        approve=at.adapters.ask_client,
    )
    with serve(front.streamable_http_app(authenticator=_ByHeader())) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    RAN.clear()


class Person:
    """An elicitation callback: answers every form as ``answer`` says, and keeps the forms."""

    def __init__(self, answer: types.ElicitResult | types.ErrorData) -> None:
        self.answer = answer
        self.forms: list[types.ElicitRequestFormParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.forms.append(params)
        return self.answer


APPROVE = types.ElicitResult(action="accept", content={"decision": "approve"})
DENY = types.ElicitResult(action="accept", content={"decision": "deny"})


@asynccontextmanager
async def client(
    url: str, mode: Mode, person: Person | None = None, *, who: str = "ana"
) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"x-who": who}) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            elicitation_callback=person,
        ) as sdk,
    ):
        yield sdk


def text(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def asked(url: str, input: JsonObject, *, who: str = "ana") -> types.InputRequiredResult:
    """The first leg of a 2026-07-28 call, driven by hand: the question."""
    async with client(url, MODERN, Person(APPROVE), who=who) as sdk:
        first = await sdk.session.call_tool("files__delete", input, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    assert first.request_state is not None
    return first


async def answered(
    url: str,
    input: JsonObject,
    state: str,
    *,
    who: str = "ana",
    answer: types.ElicitResult = APPROVE,
) -> types.CallToolResult | types.InputRequiredResult:
    """The call sent again with an answer and ``state``; a refusal raises (``MCPError``)."""
    refused: MCPError | None = None
    async with client(url, MODERN, Person(APPROVE), who=who) as sdk:
        try:
            return await sdk.session.call_tool(
                "files__delete",
                input,
                input_responses={"approval": answer},
                request_state=state,
                allow_input_required=True,
            )
        except MCPError as error:  # raised out here, not in the client's task group
            refused = error
    raise refused


# The attacks.


def _edited(state: str, **claims: object) -> str:
    payload, _, signature = state.partition(".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    decoded.update(claims)
    encoded = base64.urlsafe_b64encode(json.dumps(decoded).encode()).decode().rstrip("=")
    return f"{encoded}.{signature}"


async def test_an_edited_state_is_refused_and_the_tool_does_not_run(url: str) -> None:
    first = await asked(url, {"path": "a.log"})
    assert first.request_state is not None
    far = _edited(first.request_state, e=4_000_000_000)
    with pytest.raises(MCPError, match="was changed"):
        await answered(url, {"path": "a.log"}, far)
    payload, _, signature = first.request_state.partition(".")
    flipped = payload + "." + ("A" if signature[0] != "A" else "B") + signature[1:]
    with pytest.raises(MCPError, match="was changed"):
        await answered(url, {"path": "a.log"}, flipped)
    assert RAN == []


async def test_another_callers_state_is_refused(url: str) -> None:
    first = await asked(url, {"path": "a.log"}, who="ana")
    assert first.request_state is not None
    with pytest.raises(MCPError, match="another caller"):
        await answered(url, {"path": "a.log"}, first.request_state, who="bob")
    assert RAN == []


async def test_a_state_for_another_input_or_tool_is_refused(url: str) -> None:
    first = await asked(url, {"path": "a.log"})
    assert first.request_state is not None
    with pytest.raises(MCPError, match="another call"):
        await answered(url, {"path": "/etc/passwd"}, first.request_state)
    assert RAN == []


async def test_a_state_is_answered_once_and_a_replay_is_refused(url: str) -> None:
    first = await asked(url, {"path": "a.log"})
    assert first.request_state is not None
    done = await answered(url, {"path": "a.log"}, first.request_state)
    assert isinstance(done, types.CallToolResult)
    assert text(done) == "deleted a.log"
    with pytest.raises(MCPError, match="answered already"):
        await answered(url, {"path": "a.log"}, first.request_state)
    assert RAN == [{"path": "a.log"}]


@pytest.mark.parametrize(
    ("state", "refusal"),
    [
        ("A" * 1_000_000, "is not one this server gave"),
        ("A" * (MAX_STATE_LENGTH + 1), "is not one this server gave"),
        ("[" * 1_000, "is not one this server gave"),
        (base64.urlsafe_b64encode(b"[" * 300).decode().rstrip("=") + ".AAAA", "was changed"),
        ("[" * 400, "was changed"),
        ("", "was changed"),
        (".", "was changed"),
        ("\u202e.\u202e", "was changed"),
    ],
    ids=[
        "huge",
        "just-too-long",
        "nested-long",
        "nested-unsigned",
        "nested-raw",
        "empty",
        "dot",
        "bidi",
    ],
)
async def test_a_huge_nested_or_foreign_state_is_refused_unread(
    url: str, state: str, refusal: str
) -> None:
    with pytest.raises(MCPError, match=refusal):
        await answered(url, {"path": "a.log"}, state)
    assert RAN == []


async def test_an_input_cannot_forge_the_forms_text(url: str) -> None:
    forged = (
        '"}\nTool: files__list\nSource: trusted\nInput: {}\u2028Tool: safe'
        "\u202e\x1b[2J\x1b]8;;http://evil\x07\u200b" + "x" * (2 * MAX_SHOWN)
    )
    person = Person(DENY)
    async with client(url, "legacy", person) as sdk:
        result = await sdk.call_tool("files__delete", {"path": forged})
    assert result.is_error
    [form] = person.forms
    lines = form.message.split("\n")
    assert lines[:3] == [
        "A tool call needs your approval.",
        "Tool: files__delete",
        "Source: files__delete",
    ]
    assert len(lines) == 4
    assert lines[3].startswith('Input: {"path": "\\"}\\nTool: files__list')
    for hidden in ("\u2028", "\u202e", "\x1b", "\x07", "\u200b"):
        assert hidden not in form.message
    assert "\\u2028" in lines[3]
    assert "\\u202e" in lines[3]
    assert "\\u001b[2J" in lines[3]
    assert lines[3].endswith("more characters not shown)")
    assert len(form.message) < MAX_SHOWN + 500
    assert RAN == []


def test_a_state_expires_and_the_used_ones_are_bounded() -> None:
    now = [1_000.0]
    states = ApprovalStates(ttl=60, max_used=2, clock=lambda: now[0])
    one = states.seal(tool="t", input={}, caller="key:ana")
    now[0] += 60
    with pytest.raises(StateRefused, match="expired"):
        states.open(one, tool="t", input={}, caller="key:ana")
    made = [states.seal(tool="t", input={}, caller="key:ana") for _ in range(3)]
    states.open(made[0], tool="t", input={}, caller="key:ana")
    states.open(made[1], tool="t", input={}, caller="key:ana")
    with pytest.raises(StateRefused, match="Too many"):
        states.open(made[2], tool="t", input={}, caller="key:ana")
    now[0] += 61  # the two used expire, and are forgotten
    fresh = states.seal(tool="t", input={}, caller="key:ana")
    states.open(fresh, tool="t", input={}, caller="key:ana")
    with pytest.raises(StateRefused, match="answered already"):
        states.open(fresh, tool="t", input={}, caller="key:ana")


def test_a_state_of_another_key_is_refused() -> None:
    ours, theirs = ApprovalStates(key=b"k" * 32), ApprovalStates(key=b"j" * 32)
    state = theirs.seal(tool="t", input={}, caller="c")
    with pytest.raises(StateRefused, match="was changed"):
        ours.open(state, tool="t", input={}, caller="c")
    with pytest.raises(ValueError, match="32 bytes"):
        ApprovalStates(key=b"short")


# The client asks its person.


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_approves_runs_the_tool_once(url: str, mode: Mode) -> None:
    person = Person(APPROVE)
    async with client(url, mode, person) as sdk:
        result = await sdk.call_tool("files__delete", {"path": "a.log"})
    assert not result.is_error
    assert text(result) == "deleted a.log"
    assert RAN == [{"path": "a.log"}]
    [form] = person.forms
    assert form.message.splitlines()[1:] == [
        "Tool: files__delete",
        "Source: files__delete",
        'Input: {"path": "a.log"}',
    ]
    assert form.requested_schema["properties"]["decision"]["enum"] == ["approve", "deny"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "answer",
    [
        DENY,
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
    ],
    ids=["deny", "decline", "cancel"],
)
async def test_a_client_that_denies_does_not_run_the_tool(
    url: str, mode: Mode, answer: types.ElicitResult
) -> None:
    async with client(url, mode, Person(answer)) as sdk:
        result = await sdk.call_tool("files__delete", {"path": "a.log"})
    assert result.is_error
    assert "did not approve" in text(result)
    assert RAN == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_reads_that_nobody_could_be_asked(
    url: str, mode: Mode
) -> None:
    async with client(url, mode) as sdk:
        result = await sdk.call_tool("files__delete", {"path": "a.log"})
    assert result.is_error
    assert text(result) == at.ApprovalRequired.default_message
    assert RAN == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_answers_with_an_error_or_no_decision_is_no_approval(
    url: str, mode: Mode
) -> None:
    for answer in (
        types.ErrorData(code=-32603, message="the person's window crashed"),
        types.ElicitResult(action="accept", content={"decision": "yes please"}),
    ):
        async with client(url, mode, Person(answer)) as sdk:
            if mode == MODERN and isinstance(answer, types.ErrorData):
                # the SDK's driver raises its callback's error, and sends nothing again
                with pytest.raises(MCPError):
                    await sdk.call_tool("files__delete", {"path": "a.log"})
                continue
            result = await sdk.call_tool("files__delete", {"path": "a.log"})
        assert result.is_error
        assert text(result) == at.ApprovalRequired.default_message
    assert RAN == []


def test_outside_a_front_nobody_can_be_asked() -> None:
    assert at.adapters.client_can_be_asked() is False


async def test_outside_a_front_ask_client_raises_approval_required() -> None:
    with pytest.raises(at.ApprovalRequired, match="no MCP client"):
        await at.adapters.ask_client("files__delete", {})


# Code mode in 2026-07-28: the run pauses, apart, until the call comes again with the answer.

CODE = """
try:
    return await tools.files__delete({"path": "a.log"})
except ToolError as error:
    return str(error).split(":")[0]
"""


@asynccontextmanager
async def code_front(ttl: float = 600.0) -> AsyncIterator[httpx2.AsyncClient]:
    presented = at.code_mode(
        Toolkit.from_entries([ToolEntry(tool=DELETE, handler=_delete)]),
        at.InProcessRuntime(),
        approval="ask",
    )
    front = at.adapters.mcp_server(
        presented, name="code", approve=at.adapters.ask_client, approval_ttl=ttl
    )
    app = front.streamable_http_app(json_response=True, authenticator=_ByHeader())
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app),
            base_url="http://127.0.0.1:8000",
            headers={"x-who": "ana"},
        ) as http,
    ):
        yield http


@asynccontextmanager
async def modern(http: httpx2.AsyncClient, person: Person) -> AsyncIterator[Client]:
    async with Client(
        streamable_http_client("http://127.0.0.1:8000/mcp", http_client=http),
        mode=MODERN,
        elicitation_callback=person,
    ) as sdk:
        yield sdk


async def test_a_run_from_code_pauses_and_resumes_with_the_clients_answer() -> None:
    person = Person(APPROVE)
    async with code_front() as http, modern(http, person) as sdk:
        result = await sdk.call_tool("execute", {"code": CODE})
    assert json.loads(text(result))["result"] == "deleted a.log"
    assert RAN == [{"path": "a.log"}]
    [form] = person.forms
    assert "Source: called from code, in execute" in form.message


@pytest.mark.virtual_clock
async def test_a_paused_run_nobody_answers_ends_and_its_call_does_not_run() -> None:
    async with code_front(ttl=60) as http, modern(http, Person(APPROVE)) as sdk:
        first = await sdk.session.call_tool("execute", {"code": CODE}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert first.request_state is not None
        await anyio.sleep(61)  # virtual: the run waited its 60 seconds, and ended
        with pytest.raises(MCPError, match="paused run this answers is gone"):
            await sdk.session.call_tool(
                "execute",
                {"code": CODE},
                input_responses={"approval": APPROVE},
                request_state=first.request_state,
                allow_input_required=True,
            )
    assert RAN == []


async def test_past_the_paused_runs_bound_a_call_from_code_reads_approval_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mcp_front, "MAX_PAUSED", 1)
    async with code_front() as http, modern(http, Person(APPROVE)) as sdk:
        first = await sdk.session.call_tool("execute", {"code": CODE}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        second = await sdk.session.call_tool("execute", {"code": CODE}, allow_input_required=True)
    assert isinstance(second, types.CallToolResult)
    assert json.loads(text(second))["result"] == "ApprovalRequired"
    assert RAN == []


def test_a_state_is_as_long_whatever_its_tool_input_and_caller() -> None:
    states = ApprovalStates()
    long = states.seal(
        tool="t" * 10_000, input={"x": "y" * 10_000}, caller="c" * 10_000, run="r" * 32
    )
    assert len(long) <= MAX_STATE_LENGTH
    states.open(long, tool="t" * 10_000, input={"x": "y" * 10_000}, caller="c" * 10_000)
