"""The gateway's out-of-band approvals: who is asked, ``/approvals``, the webhook, the terminal.

A call that needs approval is asked as its profile's ``approval`` says (``[approval]`` for
``[policy]``'s callers): ``by = "caller"`` asks the calling client alone, ``"approvers"`` asks out
of band alone, ``"either"`` (the default) the client when it declared elicitation, else out of
band. Out of band, the call waits as a pending approval
(:class:`~amends_toolkit.adapters.Approvals`, kept in memory or in ``[approval] store``), which
is:

- logged (``approval.pending``: its id, tool, source and profile, never the input nor the caller's
  id, which may hold an issuer's address; the call's audit line names the caller);
- posted to ``[approval] webhook``, if given: the same fields and the input's digest, never the
  input nor a credential, within :data:`WEBHOOK_TIMEOUT` (a failure is logged,
  ``gateway.webhook_failed``, and the call waits on);
- asked on the gateway's terminal with ``--approve-on-terminal``, one question at a time;
- listed at ``GET /approvals`` to a caller that the profile's ``approvers`` match, and decided
  by one at ``POST /approvals/{id}`` with ``{"approve": true}`` or ``{"approve": false}``.

An approver is authenticated as any caller is (``[auth]``; 401 without a credential, or a bad
one): one that no profile names as an approver is refused (403), and one sees and decides only
the approvals of the profiles whose ``approvers`` match it, never its own calls'. With nobody to
ask (no approvers, no terminal) a call fails at once as ``ApprovalRequired``; with nobody deciding
in the profile's ``timeout``, as ``ApprovalTimedOut``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from typing import TYPE_CHECKING, Final

import anyio
import httpx
from starlette.responses import JSONResponse
from starlette.routing import Route

from amends_toolkit._log import get_logger
from amends_toolkit.adapters import (
    AlreadyDecided,
    Approvals,
    Refused,
    SQLiteApprovalStore,
    UnknownApproval,
)
from amends_toolkit.cli._config import DEFAULT_PROFILE, ConfigError, expand_header
from amends_toolkit.cli._profiles import matches
from amends_toolkit.cli._terminal import approval_question, ask

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from starlette.requests import Request
    from starlette.responses import Response

    from amends_toolkit._json import JsonObject
    from amends_toolkit.adapters import Authenticator, Caller, PendingApproval
    from amends_toolkit.cli._config import ApprovalConfig, GatewayConfig

__all__ = ("MAX_DECISION_BODY", "WEBHOOK_TIMEOUT", "GatewayApprovals")

_log = get_logger("amends_toolkit.gateway")

WEBHOOK_TIMEOUT: Final = 5.0
"""Seconds the webhook may take to connect and to answer one announcement."""
MAX_DECISION_BODY: Final = 1_024
"""The most bytes of a ``POST /approvals/{id}`` body read; a longer one is refused (413)."""
_ID: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class GatewayApprovals:
    """The approvals of one gateway: each profile's rule, the pending approvals (once
    :meth:`open`), the routes.

    Raises:
        ConfigError: the webhook's variable is unset, or holds no http(s) URL.
    """

    def __init__(
        self, config: GatewayConfig, *, terminal: bool, webhook_timeout: float = WEBHOOK_TIMEOUT
    ) -> None:
        self.rules: dict[str, ApprovalConfig] = {p.name: p.approval for p in config.profiles}
        self.rules[DEFAULT_PROFILE] = config.approval
        self.terminal = terminal
        self._ask_lock = anyio.Lock()
        self._webhook = _expanded(config, config.approval_webhook)
        self._webhook_timeout = webhook_timeout
        self._config = config
        self._client: httpx.AsyncClient | None = None
        self._store: SQLiteApprovalStore | None = None
        self._approvals: Approvals | None = None

    @property
    def approvals(self) -> Approvals:
        """The pending approvals, once :meth:`open`."""
        assert self._approvals is not None, "GatewayApprovals.open() first"
        return self._approvals

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[Approvals]:
        """Open the store and the webhook's client for the gateway's life; close them after.

        Raises:
            ConfigError: ``[approval] store`` cannot be opened as a SQLite file of approvals.
        """
        config = self._config
        if config.approval_store is not None:
            try:
                self._store = SQLiteApprovalStore(config.approval_store)
            except sqlite3.Error as error:
                raise ConfigError(
                    f"{config.path}: [approval] store {str(config.approval_store)!r} cannot be "
                    f"used as a SQLite file of approvals ({error})"
                ) from None
        self._approvals = Approvals(
            store=self._store,
            announce=self._announce,
            max_pending=config.approval_max_pending,
            max_pending_per_caller=config.approval_max_pending_per_caller,
        )
        try:
            # One client for every announcement (never one per call).
            async with contextlib.AsyncExitStack() as stack:
                if self._webhook is not None:
                    self._client = await stack.enter_async_context(
                        httpx.AsyncClient(timeout=self._webhook_timeout, follow_redirects=False)
                    )
                yield self._approvals
        finally:
            self._client = None
            if self._store is not None:
                self._store.close()

    def rule(self, profile: str) -> ApprovalConfig:
        """How the calls of ``profile`` are approved."""
        return self.rules.get(profile, self.rules[DEFAULT_PROFILE])

    def can_ask(self, profile: str) -> bool:
        """Whether anyone may decide the calls of ``profile`` out of band."""
        return self.terminal or self.rule(profile).approvers is not None

    def has_approvers(self) -> bool:
        """Whether any profile has approvers (or the terminal is one)."""
        return self.terminal or any(r.approvers is not None for r in self.rules.values())

    def approver_of(self, caller: Caller) -> set[str]:
        """The profiles whose approvals ``caller`` may decide."""
        return {
            name
            for name, rule in self.rules.items()
            if rule.approvers is not None and matches(rule.approvers, caller)
        }

    # Announcing.

    async def _announce(self, pending: PendingApproval) -> None:
        async with anyio.create_task_group() as tasks:
            if self._client is not None:
                tasks.start_soon(self._post, pending)
            if self.terminal:
                tasks.start_soon(self._ask_terminal, pending)

    async def _post(self, pending: PendingApproval) -> None:
        assert self._client is not None
        assert self._webhook is not None
        body = {
            key: pending.to_json()[key]
            for key in ("id", "tool", "source", "input_digest", "caller", "profile", "deadline")
        }
        try:
            answer = await self._client.post(self._webhook, json=body)
        except httpx.HTTPError as error:
            # Its type alone: an error's text may repeat the URL, and a secret in it.
            _log.warning("gateway.webhook_failed", id=pending.id, error=type(error).__name__)
            return
        if not answer.is_success:
            _log.warning("gateway.webhook_failed", id=pending.id, status=answer.status_code)

    async def _ask_terminal(self, pending: PendingApproval) -> None:
        async with self._ask_lock:  # one question at a time
            answer = await ask(approval_question(pending.tool, pending.input_shown))
        if answer is None:
            return  # nobody could answer there: another approver, or the timeout, decides
        # Decided elsewhere, or timed out, while the question was read: the first decision holds.
        with contextlib.suppress(UnknownApproval, AlreadyDecided):
            await self.approvals.decide(pending.id, approve=answer, by="terminal")

    # HTTP.

    def routes(self, authenticator: Authenticator) -> Sequence[Route]:
        """``GET /approvals`` and ``POST /approvals/{id}``, each authenticated."""

        async def approver(request: Request) -> tuple[Caller, set[str]] | Response:
            try:
                caller = await authenticator.authenticate(request)
            except Refused as refused:
                return JSONResponse(
                    {"error": refused.reason, "error_description": refused.message},
                    status_code=refused.status,
                    headers=dict(refused.headers),
                )
            profiles = self.approver_of(caller)
            if not profiles:
                _log.info("gateway.refused", reason="not_approver", status=403, kind="approvals")
                return _error(403, "not_approver", "This caller may not decide approvals.")
            return caller, profiles

        async def listed(request: Request) -> Response:
            found = await approver(request)
            if not isinstance(found, tuple):
                return found
            _, profiles = found
            pending = [p.to_json() for p in await self.approvals.pending() if p.profile in profiles]
            return JSONResponse({"approvals": pending})

        async def decided(request: Request) -> Response:
            found = await approver(request)
            if not isinstance(found, tuple):
                return found
            caller, profiles = found
            approve = await _decision(request)
            if not isinstance(approve, bool):
                return approve
            id = request.path_params["id"]
            pending = await self.approvals.get(id) if _ID.match(id) else None
            # Another profile's approval is as unknown to this approver as a forged id.
            if pending is None or pending.profile not in profiles:
                return _error(404, "unknown_approval", "No approval of this id is pending.")
            if pending.caller == caller.id:
                return _error(403, "own_call", "An approver may not decide its own call.")
            try:
                done = await self.approvals.decide(
                    id, approve=approve, by=f"approver {caller.kind}:{caller.name}"
                )
            except UnknownApproval:
                return _error(404, "unknown_approval", "No approval of this id is pending.")
            except AlreadyDecided:
                return _error(409, "already_decided", "This approval was decided already.")
            return JSONResponse({"id": done.id, "approved": done.approved})

        return [
            Route("/approvals", listed, methods=["GET"]),
            Route("/approvals/{id}", decided, methods=["POST"]),
        ]


async def _decision(request: Request) -> bool | Response:
    """The ``approve`` of a decision's body, or the answer that refuses the body."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_DECISION_BODY:
            return _error(413, "too_large", f"A decision is at most {MAX_DECISION_BODY} bytes.")
    try:
        decision: JsonObject = json.loads(body)
    except ValueError:
        decision = {}
    approve = decision.get("approve") if isinstance(decision, dict) else None
    if not isinstance(approve, bool) or len(decision) != 1:
        return _error(400, "bad_decision", 'Send {"approve": true} or {"approve": false}.')
    return approve


def _error(status: int, error: str, description: str) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


def _expanded(config: GatewayConfig, webhook: str | None) -> str | None:
    """The webhook's URL, its ``${VAR}`` expanded.

    Raises:
        ConfigError: its variable is not set, or its value is no http(s) URL.
    """
    if webhook is None or not webhook.startswith("${"):
        return webhook
    try:
        url = expand_header(webhook)
    except KeyError as missing:
        raise ConfigError(
            f"{config.path}: [approval] webhook: set the environment variable {missing.args[0]}"
        ) from None
    if not url.startswith(("https://", "http://")):
        raise ConfigError(f"{config.path}: [approval] webhook: its variable holds no http(s) URL")
    return url
