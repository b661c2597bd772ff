"""Out-of-band approvals over a real gateway process, with the official SDK client (which
declares no elicitation): a call waits, is listed at ``GET /approvals``, and is decided at
``POST /approvals/{id}`` by an approver's key; the webhook (a real app on loopback) is told of
it; a restart with the SQLite store keeps it."""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from conformance._servers import serve

from .gateway import GatewayProcess, eventually
from .test_auth import keyed

pytestmark = pytest.mark.anyio

KEYS = {
    name: secrets.token_urlsafe(32)
    for name in ("agent", "other", "ops", "hasty", "strict", "direct", "selfish")
}
ENV = {f"{name.upper()}_KEY": key for name, key in KEYS.items()}
SECRET_INPUT = 424_242
"""A task id no announcement or log line may hold."""


class Upstream:
    """An MCP server whose ``delete_task`` records each run (served on loopback by uvicorn)."""

    def __init__(self) -> None:
        self.deleted: list[int] = []

    def app(self) -> Any:
        from mcp.server import MCPServer

        server = MCPServer("tasks")

        @server.tool()
        def delete_task(task_id: int) -> str:
            """Delete a task for good."""
            self.deleted.append(task_id)
            return f"deleted {task_id}"

        @server.tool()
        def list_tasks() -> list[str]:
            """List the tasks."""
            return ["water the plants"]

        return server.streamable_http_app()


class Webhook:
    """A loopback app that records each announcement it is posted."""

    def __init__(self) -> None:
        self.posted: list[tuple[dict[str, Any], dict[str, str]]] = []
        self.lock = threading.Lock()

    def app(self) -> Starlette:
        async def hook(request: Request) -> Response:
            body = await request.json()
            with self.lock:
                self.posted.append((body, dict(request.headers)))
            return Response(status_code=204)

        return Starlette(routes=[Route("/hook", hook, methods=["POST"])])


def config(directory: Path, upstream: int, webhook: int, *, store: Path | None = None) -> Path:
    keys = ", ".join(f'{name} = "${{{name.upper()}_KEY}}"' for name in KEYS)
    approve = 'policy = { allow = ["tasks__list_tasks"], approve = ["tasks__delete_task"] }'
    stored = "" if store is None else f"store = {json.dumps(str(store))}\n"
    path = directory / "gateway.toml"
    path.write_text(
        f"""
[[sources]]
name = "tasks"
mcp = "http://127.0.0.1:{upstream}/mcp"

[serve]
grace = 1

[auth]
type = "keys"
keys = {{ {keys} }}

[approval]
webhook = "http://127.0.0.1:{webhook}/hook"
{stored}
[[profiles]]
name = "agents"
match = {{ keys = ["agent", "other"] }}
{approve}
approval = {{ approvers = {{ keys = ["ops"] }} }}

[[profiles]]
name = "hasty"
match = {{ keys = ["hasty"] }}
{approve}
approval = {{ approvers = {{ keys = ["ops"] }}, timeout = 1 }}

[[profiles]]
name = "strict"
match = {{ keys = ["strict"] }}
{approve}
approval = {{ by = "approvers", approvers = {{ keys = ["ops"] }} }}

[[profiles]]
name = "direct"
match = {{ keys = ["direct"] }}
{approve}
approval = {{ by = "caller" }}

[[profiles]]
name = "selfish"
match = {{ keys = ["selfish"] }}
{approve}
approval = {{ approvers = {{ keys = ["selfish"] }} }}
"""
    )
    return path


class Served:
    def __init__(self, gateway: GatewayProcess, upstream: Upstream, webhook: Webhook) -> None:
        self.gateway = gateway
        self.upstream = upstream
        self.webhook = webhook


@contextlib.contextmanager
def servers() -> Iterator[tuple[Upstream, int, Webhook, int]]:
    upstream, webhook = Upstream(), Webhook()
    with serve(upstream.app()) as upstream_port, serve(webhook.app()) as webhook_port:
        yield upstream, upstream_port, webhook, webhook_port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with servers() as (upstream, upstream_port, webhook, webhook_port):
        path = config(tmp_path_factory.mktemp("approvals"), upstream_port, webhook_port)
        gateway = GatewayProcess(path, env=ENV)
        try:
            gateway.wait_ready()
            yield Served(gateway, upstream, webhook)
        finally:
            gateway.stop()


def headers(who: str | None) -> dict[str, str]:
    return {} if who is None else {"Authorization": f"Bearer {KEYS[who]}"}


async def listed(base: str, who: str | None = "ops") -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"{base}/approvals", headers=headers(who))


async def decide(base: str, id: str, body: Any, who: str | None = "ops") -> httpx.Response:
    async with httpx.AsyncClient() as http:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await http.post(f"{base}/approvals/{id}", headers=headers(who), content=content)


async def asked(base: str, caller: str, *, approver: str = "ops") -> dict[str, Any]:
    """The pending approval of ``caller``'s call, once the gateway lists it to ``approver``."""
    found: list[dict[str, Any]] = []

    async def listing() -> bool:
        answer = await listed(base, approver)
        found[:] = [a for a in answer.json()["approvals"] if a["caller"] == f"key:{caller}"]
        return bool(found)

    await eventually(listing)
    return found[0]


@contextlib.asynccontextmanager
async def calling(
    url: str, who: str, mode: str, task_id: int
) -> AsyncIterator[list[types.CallToolResult]]:
    """A call of ``tasks__delete_task`` by ``who`` running over the block; its result once
    the block ends (the block must get it decided)."""
    results: list[types.CallToolResult] = []
    async with keyed(url, KEYS[who], mode) as client, anyio.create_task_group() as tasks:

        async def call() -> None:
            results.append(await client.call_tool("tasks__delete_task", {"task_id": task_id}))

        tasks.start_soon(call)
        yield results


def text(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


def audit(gateway: GatewayProcess, caller: str) -> list[tuple[str, str]]:
    return [
        (e["decision"], e["outcome"])
        for e in gateway.events("gateway.call")
        if e.get("caller") == caller and e["tool"] == "tasks__delete_task"
    ]


# The attacks first.


async def test_an_unauthenticated_caller_is_refused_401_and_a_non_approver_403(
    served: Served,
) -> None:
    base = served.gateway.base
    assert (await listed(base, None)).status_code == 401
    async with httpx.AsyncClient() as http:
        bad = await http.get(f"{base}/approvals", headers={"Authorization": "Bearer " + "x" * 40})
    assert bad.status_code == 401
    for who in ("agent", "other", "hasty"):
        refused = await listed(base, who)
        assert refused.status_code == 403
        assert refused.json()["error"] == "not_approver"
        assert (await decide(base, "x" * 24, {"approve": True}, who)).status_code == 403
    assert (await decide(base, "x" * 24, {"approve": True}, None)).status_code == 401


async def test_a_non_approver_cannot_decide_a_real_pending_approval_and_the_call_does_not_run(
    served: Served,
) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    async with calling(url, "agent", "legacy", 1) as results:
        pending = await asked(base, "agent")
        for who in ("agent", "other"):
            assert (await decide(base, pending["id"], {"approve": True}, who)).status_code == 403
        assert served.upstream.deleted.count(1) == 0
        assert (await decide(base, pending["id"], {"approve": False})).status_code == 200
    assert results[0].is_error
    assert served.upstream.deleted.count(1) == 0


async def test_a_forged_id_a_bad_body_and_a_second_decision_are_refused(served: Served) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    for forged in ("x" * 24, "x%2Fy", "%00", "a" * 10_000, "' OR 1=1 --"):
        answer = await decide(base, forged, {"approve": True})
        assert answer.status_code == 404, forged
    async with calling(url, "agent", "legacy", 2) as results:
        pending = await asked(base, "agent")
        id = pending["id"]
        for body in ({"approve": "yes"}, {"approve": 1}, {}, [True], {"approve": True, "by": "x"}):
            answer = await decide(base, id, body)
            assert (answer.status_code, answer.json()["error"]) == (400, "bad_decision"), body
        assert (await decide(base, id, b"not json")).status_code == 400
        assert (await decide(base, id, b"{" + b" " * 100_000 + b"}")).status_code == 413
        assert (await decide(base, id, {"approve": True})).status_code == 200
    assert not results[0].is_error
    again = await decide(base, id, {"approve": False})
    assert (again.status_code, again.json()["error"]) == (404, "unknown_approval")
    assert served.upstream.deleted.count(2) == 1


async def test_an_approver_may_not_decide_its_own_call(served: Served) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    async with keyed(url, KEYS["selfish"], "legacy") as client, anyio.create_task_group() as tasks:
        tasks.start_soon(client.call_tool, "tasks__delete_task", {"task_id": 3})
        own = await asked(base, "selfish", approver="selfish")
        refused = await decide(base, own["id"], {"approve": True}, "selfish")
        assert (refused.status_code, refused.json()["error"]) == (403, "own_call")
        # ops approves no call of selfish's profile: to ops it is unknown.
        assert own["id"] not in [a["id"] for a in (await listed(base)).json()["approvals"]]
        assert (await decide(base, own["id"], {"approve": True})).status_code == 404
        tasks.cancel_scope.cancel()
    assert 3 not in served.upstream.deleted


async def test_a_flood_of_calls_from_one_caller_is_bounded(served: Served) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    results: list[types.CallToolResult] = []
    async with (
        keyed(url, KEYS["strict"], "2026-07-28") as client,
        anyio.create_task_group() as tasks,
    ):

        async def call(n: int) -> None:
            results.append(await client.call_tool("tasks__delete_task", {"task_id": 1000 + n}))

        for n in range(14):
            tasks.start_soon(call, n)
        await eventually(lambda: len(results) >= 4)
        refused = list(results)
        pending: list[dict[str, Any]] = []

        async def listing() -> bool:
            answer = (await listed(base)).json()["approvals"]
            pending[:] = [a for a in answer if a["profile"] == "strict"]
            return len(pending) >= 10

        await eventually(listing)
        for approval in pending:
            assert (await decide(base, approval["id"], {"approve": False})).status_code == 200
    assert len(pending) == 10
    assert all(r.is_error and "nobody could be asked" in text(r) for r in refused)
    assert not any(1000 <= n < 1014 for n in served.upstream.deleted)


async def test_a_huge_input_is_listed_cut_and_plain(served: Served) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    async with (
        keyed(url, KEYS["strict"], "2026-07-28") as client,
        anyio.create_task_group() as tasks,
    ):
        results: list[types.CallToolResult] = []

        async def call() -> None:
            hostile = {"task_id": 5, "note\u202e": "\x1b[2J" + "x" * 500_000}
            results.append(await client.call_tool("tasks__delete_task", hostile))

        tasks.start_soon(call)
        found: list[dict[str, Any]] = []

        async def listing() -> bool:
            answer = await listed(base)
            found[:] = [a for a in answer.json()["approvals"] if a["caller"] == "key:strict"]
            return bool(found)

        await eventually(listing)
        approval = found[0]
        assert (await decide(base, approval["id"], {"approve": False})).status_code == 200
    assert len(approval["input"]) < 5_000
    assert approval["input"].endswith("more characters not shown)")
    assert "\\u202e" in approval["input"]
    assert "\u202e" not in approval["input"]
    assert results[0].is_error  # InvalidInputError or ApprovalDenied: it did not run
    assert 5 not in served.upstream.deleted


# Deciding.


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_call_waits_is_listed_and_approved_by_an_approver_then_runs_once(
    served: Served, mode: str
) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    task_id = SECRET_INPUT + (1 if mode == "legacy" else 2)
    async with calling(url, "agent", mode, task_id) as results:
        pending = await asked(base, "agent")
        assert served.upstream.deleted.count(task_id) == 0
        assert results == []
        assert {k: pending[k] for k in ("tool", "source", "caller", "profile")} == {
            "tool": "tasks__delete_task",
            "source": "tasks",
            "caller": "key:agent",
            "profile": "agents",
        }
        assert pending["input"] == json.dumps({"task_id": task_id})
        approved = await decide(base, pending["id"], {"approve": True})
        assert approved.json() == {"id": pending["id"], "approved": True}
    assert not results[0].is_error
    assert f"deleted {task_id}" in text(results[0])
    assert served.upstream.deleted.count(task_id) == 1
    await eventually(
        lambda: ("approved by approver keys:ops", "ok") in audit(served.gateway, "agent")
    )
    # The webhook was told, and told nothing of the input nor of any key.
    await eventually(lambda: any(b["id"] == pending["id"] for b, _ in served.webhook.posted))
    ((body, sent),) = [(b, h) for b, h in served.webhook.posted if b["id"] == pending["id"]]
    assert set(body) == {"id", "tool", "source", "input_digest", "caller", "profile", "deadline"}
    assert body["input_digest"] == pending["input_digest"]
    assert str(task_id) not in json.dumps([body, sent])
    assert not any(key in json.dumps([body, sent]) for key in KEYS.values())
    assert not any(str(task_id) in line for line in served.gateway.lines)
    assert served.gateway.events("approval.pending")


@pytest.mark.parametrize("who", ["agent", "strict"])
async def test_a_denied_call_does_not_run_and_reads_that_a_person_did_not_approve(
    served: Served, who: str
) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    async with calling(url, who, "2026-07-28", 77) as results:
        pending = await asked(base, who)
        assert (await decide(base, pending["id"], {"approve": False})).status_code == 200
    assert results[0].is_error
    assert "did not approve" in text(results[0])
    assert 77 not in served.upstream.deleted
    await eventually(lambda: ("denied", "ApprovalDenied") in audit(served.gateway, who))


async def test_nobody_deciding_in_time_is_approval_timed_out(served: Served) -> None:
    url = served.gateway.wait_ready()
    async with keyed(url, KEYS["hasty"], "legacy") as client:
        result = await client.call_tool("tasks__delete_task", {"task_id": 88})
    assert result.is_error
    assert "nobody decided in time" in text(result)
    assert 88 not in served.upstream.deleted
    await eventually(lambda: ("unapproved", "ApprovalTimedOut") in audit(served.gateway, "hasty"))


async def test_by_caller_with_a_client_that_cannot_be_asked_is_approval_required(
    served: Served,
) -> None:
    url = served.gateway.wait_ready()
    async with keyed(url, KEYS["direct"], "legacy") as client:
        result = await client.call_tool("tasks__delete_task", {"task_id": 99})
    assert result.is_error
    assert "nobody could be asked" in text(result)
    assert 99 not in served.upstream.deleted
    await eventually(lambda: ("unapproved", "ApprovalRequired") in audit(served.gateway, "direct"))


async def test_a_pending_approval_survives_a_restart_with_the_sqlite_store(
    tmp_path: Path,
) -> None:
    with servers() as (upstream, upstream_port, _webhook, webhook_port):
        path = config(tmp_path, upstream_port, webhook_port, store=tmp_path / "approvals.db")
        first = GatewayProcess(path, env=ENV)
        try:
            url = await anyio.to_thread.run_sync(first.wait_ready)
            async with (
                keyed(url, KEYS["agent"], "legacy") as client,
                anyio.create_task_group() as tasks,
            ):

                async def call() -> None:
                    # The gateway stops under it: its answer, if any, is no matter here.
                    with contextlib.suppress(Exception):
                        await client.call_tool("tasks__delete_task", {"task_id": 31})

                tasks.start_soon(call)
                pending = await asked(first.base, "agent")
                await anyio.to_thread.run_sync(first.stop)
                tasks.cancel_scope.cancel()
        finally:
            first.close()
        assert upstream.deleted == []

        second = GatewayProcess(path, env=ENV)
        try:
            url = await anyio.to_thread.run_sync(second.wait_ready)
            base = second.base
            kept = (await listed(base)).json()["approvals"]
            assert [a["id"] for a in kept] == [pending["id"]]
            assert kept[0] == pending
            assert (await decide(base, pending["id"], {"approve": True})).status_code == 200
            assert upstream.deleted == []  # its call is gone: nothing ran
            # The agent's same call again is decided by it, once, without waiting.
            async with keyed(url, KEYS["agent"], "legacy") as client:
                result = await client.call_tool("tasks__delete_task", {"task_id": 31})
            assert not result.is_error
            assert upstream.deleted == [31]
            await eventually(
                lambda: ("approved by approver keys:ops", "ok") in audit(second, "agent")
            )
        finally:
            second.stop()


async def test_with_a_terminal_gone_nobody_decides_and_by_caller_never_asks_the_terminal(
    tmp_path: Path,
) -> None:
    # --approve-on-terminal under a service manager: no terminal to ask. A question there
    # decides nothing (the call times out, never "denied"); by = "caller" does not ask it.
    with servers() as (upstream, upstream_port, _, webhook_port):
        path = config(tmp_path, upstream_port, webhook_port)
        gateway = GatewayProcess(path, "--approve-on-terminal", env=ENV)
        try:
            url = await anyio.to_thread.run_sync(gateway.wait_ready)
            with anyio.fail_after(30):
                async with keyed(url, KEYS["hasty"], "legacy") as client:
                    waited = await client.call_tool("tasks__delete_task", {"task_id": 51})
                async with keyed(url, KEYS["direct"], "legacy") as client:
                    direct = await client.call_tool("tasks__delete_task", {"task_id": 52})
        finally:
            gateway.stop()
    assert "nobody decided in time" in text(waited)
    assert "nobody could be asked" in text(direct)
    assert upstream.deleted == []
    assert audit(gateway, "hasty") == [("unapproved", "ApprovalTimedOut")]
    assert audit(gateway, "direct") == [("unapproved", "ApprovalRequired")]
    assert any("(no terminal: not asked)" in line for line in gateway.lines)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_either_asks_a_client_that_can_be_asked_and_approvers_never_does(
    served: Served, mode: str
) -> None:
    url, base = served.gateway.wait_ready(), served.gateway.base
    forms: list[str] = []

    async def person(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        forms.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    @contextlib.asynccontextmanager
    async def asking(who: str) -> AsyncIterator[Client]:
        async with (
            create_mcp_http_client(headers=headers(who)) as http,
            Client(
                streamable_http_client(url, http_client=http),
                mode=mode,
                cache=None,
                elicitation_callback=person,
            ) as client,
        ):
            yield client

    task_id = 600 + len(mode)
    async with asking("agent") as client:
        asked_client = await client.call_tool("tasks__delete_task", {"task_id": task_id})
    assert not asked_client.is_error
    assert len(forms) == 1
    await eventually(lambda: ("approved by client", "ok") in audit(served.gateway, "agent"))
    async with asking("strict") as client, anyio.create_task_group() as tasks:
        results: list[types.CallToolResult] = []

        async def call() -> None:
            results.append(await client.call_tool("tasks__delete_task", {"task_id": task_id}))

        tasks.start_soon(call)
        pending = await asked(base, "strict")
        assert (await decide(base, pending["id"], {"approve": True})).status_code == 200
    assert not results[0].is_error
    assert len(forms) == 1  # by = "approvers": the client was never asked
    assert served.upstream.deleted.count(task_id) == 2
