"""Asking the client that called: the ``approve`` that puts a call's question to the MCP client
of the request being served, and the signed ``requestState`` of the 2026-07-28 round trip.

The MCP front (:mod:`amends_toolkit.adapters.mcp_front`) serves each ``tools/call`` with the
request's :class:`ClientAsker` set here; :func:`ask_client` and :func:`client_can_be_asked` read
it, so a host's ``approve`` (the gateway's) may ask the client first and someone else otherwise::

    async def approve(name: str, input: JsonObject) -> bool:
        if at.adapters.client_can_be_asked():
            return await at.adapters.ask_client(name, input)
        return await ask_my_approvers(name, input)

    front = at.adapters.mcp_server(toolkit, name="tasks", approve=approve)

This module needs no SDK: the front is what speaks MCP.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import math
import secrets
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, Protocol

from amends_toolkit._errors import ApprovalRequired
from amends_toolkit._options import check_counts, check_seconds

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from amends_toolkit._json import JsonObject, JsonValue

__all__ = (
    "APPROVAL_STATE_TTL",
    "MAX_STATE_LENGTH",
    "MAX_USED_STATES",
    "ApprovalStates",
    "ClientAsker",
    "StateRefused",
    "ask_client",
    "asking_client",
    "client_can_be_asked",
    "input_digest",
)

APPROVAL_STATE_TTL: Final = 600.0
"""Seconds a 2026-07-28 approval question's ``requestState`` may be answered in."""
MAX_STATE_LENGTH: Final = 512
"""The most characters of a ``requestState`` a front reads: its own are 400 at most (whatever
the tool, its input and its caller); a longer one is refused unread."""
MAX_USED_STATES: Final = 10_000
"""Answered ``requestState`` values remembered (each until it expires) so that none is used
twice; past it an answer is refused (``StateRefused``) until the oldest expire."""


class ClientAsker(Protocol):
    """How the front asks the client of the request it serves now (one per ``tools/call``)."""

    def can_ask(self) -> bool:
        """Whether the client declared form elicitation."""
        ...

    async def ask(self, name: str, input: JsonObject) -> bool:
        """The client's person's decision.

        Raises:
            ApprovalRequired: The client could not be asked (or gave no answer).
        """
        ...


_ASKER: ContextVar[ClientAsker | None] = ContextVar("client_asker", default=None)


@contextlib.contextmanager
def asking_client(asker: ClientAsker) -> Iterator[None]:
    """Serve one request with ``asker`` as the client :func:`ask_client` asks (the front's)."""
    token = _ASKER.set(asker)
    try:
        yield
    finally:
        _ASKER.reset(token)


def client_can_be_asked() -> bool:
    """Whether the MCP client of the request being served declared the elicitation capability
    (form mode), so that :func:`ask_client` can put a question to it; ``False`` outside a
    ``tools/call`` an MCP front serves."""
    asker = _ASKER.get()
    return asker is not None and asker.can_ask()


async def ask_client(name: str, input: JsonObject) -> bool:
    """An ``approve`` that asks the MCP client of the request being served (an
    :class:`~amends_toolkit.Approve`: give it to :func:`~amends_toolkit.adapters.mcp_server`).

    The client is shown a form: the tool, its source, its input (control and bidi characters
    written as escapes, cut past :data:`~amends_toolkit._peer.MAX_SHOWN` characters) and a
    choice of approve or deny. In a session (2025-11-25 and before) it is an
    ``elicitation/create`` request the call waits on, the person's time not counted in the
    call's timeout. In 2026-07-28 the call is answered ``input_required`` and the client sends
    it again with the person's answer and the front's signed ``requestState``: only then does
    this return, in that second call. A call from code in the middle of a run (code mode) waits,
    its run paused in the front, for that second call, ``approval_ttl`` seconds at most (then the
    run ends, and nothing more of it runs).

    ``True`` only when the person accepted the form with "approve"; ``False`` when they chose
    "deny", declined, or dismissed it (``cancel``: they saw the question and did not approve).
    Cancelling the call withdraws the question.

    Raises:
        ApprovalRequired: Nobody could be asked: outside a front's ``tools/call``, a client that
            did not declare elicitation, a client that answered with an error or a malformed
            answer, a session that closed; in 2026-07-28, a call from code in the middle of a
            run when the front serves no app of its own (the run pauses in the app's lifespan)
            or :data:`~amends_toolkit.adapters.mcp_front.MAX_PAUSED` runs already wait.
    """
    asker = _ASKER.get()
    if asker is None:
        raise ApprovalRequired("no MCP client to ask: not in a call an MCP front serves")
    if not asker.can_ask():
        raise ApprovalRequired("the client did not declare elicitation, so it cannot be asked")
    return await asker.ask(name, input)


def input_digest(input: JsonValue) -> str:
    """The SHA-256 of a call's input as canonical JSON (keys sorted), its first 128 bits in hex:
    what a state binds."""
    canonical = json.dumps(input, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class StateRefused(Exception):
    """A ``requestState`` the front will not take: the message says why, for the client."""


class ApprovalStates:
    """The front's ``requestState`` values: signed (HMAC-SHA256 under ``key``), bound to a tool,
    its input (a digest) and a caller, expiring after ``ttl`` seconds, and each used once.

    Args:
        key: The HMAC key (32 bytes or more); generated (``secrets.token_bytes``) when not
            given, so a state is answered only in the process that made it.
        ttl: Seconds a state may be answered in (:data:`APPROVAL_STATE_TTL`).
        max_used: Answered states remembered until they expire (:data:`MAX_USED_STATES`).
        clock: Wall-clock seconds (a state outlives the request, and the process's monotonic
            clock means nothing to another process sharing the key).

    Raises:
        ValueError: ``key`` is shorter than 32 bytes, ``ttl`` is not a positive finite number,
            or ``max_used`` not a whole number from 1.
    """

    def __init__(
        self,
        *,
        key: bytes | None = None,
        ttl: float = APPROVAL_STATE_TTL,
        max_used: int = MAX_USED_STATES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if key is not None and (not isinstance(key, bytes) or len(key) < 32):
            raise ValueError("the approval state key must be 32 bytes or more of secret randomness")
        check_seconds(approval_ttl=ttl)
        check_counts(max_used=max_used)
        self._key = secrets.token_bytes(32) if key is None else key
        self.ttl = float(ttl)
        self._max_used = max_used
        self._clock = clock
        self._used: dict[str, float] = {}  # nonce -> expiry, in the order they were used

    def seal(self, *, tool: str, input: JsonValue, caller: str, run: str | None = None) -> str:
        """A new state for a question about this call of this caller; ``run`` names the paused
        run that waits for the answer (code mode), if one does."""
        payload = json.dumps(
            {
                "t": _digest(tool),
                "a": input_digest(input),
                "c": _digest(caller),
                "e": math.ceil(self._clock() + self.ttl),
                "n": secrets.token_hex(16),
                "r": run,
            },
            separators=(",", ":"),
            ensure_ascii=True,
        ).encode()
        return _b64(payload) + "." + _b64(self._sign(payload))

    def open(self, state: object, *, tool: str, input: JsonValue, caller: str) -> str | None:
        """Take a state sent back with an answer, for this call of this caller: once. Gives
        the paused run the answer is for (``seal``'s ``run``).

        Raises:
            StateRefused: The state is no string, too long, not one this front signed (edited),
                expired, for another tool, input or caller, or used already; or too many were
                answered lately (:data:`MAX_USED_STATES`).
        """
        if not isinstance(state, str) or len(state) > MAX_STATE_LENGTH:
            raise StateRefused("The requestState is not one this server gave.")
        encoded, dot, signature = state.partition(".")
        try:
            payload = _unb64(encoded)
            signed = dot == "." and hmac.compare_digest(_unb64(signature), self._sign(payload))
        except ValueError:
            signed = False
        if not signed:
            raise StateRefused("The requestState was changed: it is not as this server gave it.")
        # Signed by this front, so its own JSON: no depth, no size to fear.
        claims = json.loads(payload)
        now = self._clock()
        if not now < claims["e"]:
            raise StateRefused("The requestState has expired: call the tool again without it.")
        if claims["t"] != _digest(tool) or claims["a"] != input_digest(input):
            raise StateRefused("The requestState is for another call: another tool or input.")
        if not hmac.compare_digest(claims["c"], _digest(caller)):
            raise StateRefused("The requestState was given to another caller.")
        self._forget(now)
        nonce = claims["n"]
        if nonce in self._used:
            raise StateRefused("The requestState was answered already: call the tool again.")
        if len(self._used) >= self._max_used:
            raise StateRefused("Too many approvals were answered lately: call again later.")
        self._used[nonce] = claims["e"]
        run: str | None = claims["r"]
        return run

    def _forget(self, now: float) -> None:
        # The first used mostly expire first (states are answered soon after they are made):
        # the front of the memory is swept at each use, and the whole of it once it is full.
        full = len(self._used) >= self._max_used
        for nonce, expiry in list(self._used.items()):
            if expiry > now and not full:
                break
            if expiry <= now:
                del self._used[nonce]

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(
            self._key, b"amends-toolkit/approval-state/v1\n" + payload, "sha256"
        ).digest()


def _digest(text: str) -> str:
    # A tool's name and a caller's id travel as digests: a state's length is the same whatever
    # their length, and a caller's id never reaches the client as it is.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    """Strict: only the unpadded encoding :func:`_b64` writes decodes."""
    if not text.isascii():
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not base64url as this front writes it")
    return data
