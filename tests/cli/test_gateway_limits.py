"""A profile's ``limits`` over a real gateway process with keys: a caller past
``calls_per_minute`` or ``max_in_flight`` reads a retryable Failure that says when to call
again, its call reaches no source, and another caller of the same profile is served; the audit
line and the metrics say the call was refused for limits."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from amends_toolkit.cli._gateway import LIMITED
from conformance._servers import serve

from .gateway import GatewayProcess, eventually
from .test_auth import keyed, logged, refused_to_start, running
from .test_gateway import text
from .test_gateway_shares import in_flight
from .upstream import tasks_app

pytestmark = pytest.mark.anyio

KEYS = {name: secrets.token_urlsafe(32) for name in ("alice", "bob", "carol")}
ENV = {f"{name.upper()}_KEY": key for name, key in KEYS.items()}
PER_MINUTE = 4
IN_FLIGHT = 2
RELEASE = threading.Event()
"""Set when the test is done holding the slow calls: they answer then."""


class Upstream:
    """The tasks app, and the ``tools/call`` requests that reached it."""

    def __init__(self) -> None:
        self.app = tasks_app(RELEASE)
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def seen() -> Any:
            message = await receive()
            if message["type"] == "http.request" and b'"tools/call"' in message.get("body", b""):
                self.calls += 1
            return message

        await self.app(scope, seen, send)


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
def gateway(tmp_path: Path, upstream: Upstream) -> Iterator[GatewayProcess]:
    RELEASE.clear()
    keys = ", ".join(f'{name} = "${{{name.upper()}_KEY}}"' for name in KEYS)
    with serve(upstream) as port:
        path = tmp_path / "gateway.toml"
        path.write_text(
            f'[[sources]]\nname = "tasks"\nmcp = "http://127.0.0.1:{port}/mcp"\n\n'
            f'[auth]\ntype = "keys"\nkeys = {{ {keys} }}\n\n'
            '[[profiles]]\nname = "eng"\nmatch = { keys = ["alice", "bob"] }\n'
            'policy = { allow = ["tasks__list_tasks", "tasks__slow"] }\n'
            f"limits = {{ calls_per_minute = {PER_MINUTE}, max_in_flight = {IN_FLIGHT} }}\n\n"
            '[[profiles]]\nname = "ops"\nmatch = { keys = ["carol"] }\n'
            'policy = { allow = ["tasks__list_tasks"] }\n'
        )
        try:
            with running(path, env=ENV) as process:
                yield process
        finally:
            RELEASE.set()  # a test that failed mid-call leaves no call waiting


async def limited_failures(gateway: GatewayProcess) -> float:
    async with httpx.AsyncClient() as http:
        exposition = (await http.get(f"{gateway.base}/metrics")).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == "amends_gateway_call_failures_total"
        and sample.labels.get("code") == LIMITED
    )


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_caller_past_calls_per_minute_is_refused_and_another_is_served(
    gateway: GatewayProcess, upstream: Upstream, mode: str
) -> None:
    url = gateway.wait_ready()
    before = len(gateway.events("gateway.call"))
    async with keyed(url, KEYS["alice"], mode) as alice:
        for _ in range(PER_MINUTE):
            served = await alice.call_tool("tasks__list_tasks", {})
            assert "water the plants" in text(served)
        reached = upstream.calls
        assert reached == PER_MINUTE
        refused = await alice.call_tool("tasks__list_tasks", {})
    assert refused.is_error
    message = text(refused)
    assert message.startswith(
        f"This caller made {PER_MINUTE} calls in the last minute, the most its profile allows; "
        "call again in "
    )
    seconds = int(message.removesuffix(" second(s).").rsplit(" ", 1)[1])
    assert 1 <= seconds <= 61
    assert upstream.calls == reached  # it reached no source
    async with keyed(url, KEYS["bob"], mode) as bob, keyed(url, KEYS["carol"], mode) as carol:
        assert "water the plants" in text(await bob.call_tool("tasks__list_tasks", {}))
        assert "water the plants" in text(await carol.call_tool("tasks__list_tasks", {}))
    lines = await logged(gateway, "gateway.call", before, PER_MINUTE + 3)
    assert [
        (line["caller"], line["profile"], line["decision"], line["outcome"]) for line in lines
    ] == [
        *[("alice", "eng", "allowed", "ok")] * PER_MINUTE,
        ("alice", "eng", LIMITED, LIMITED),
        ("bob", "eng", "allowed", "ok"),
        ("carol", "ops", "allowed", "ok"),
    ]
    assert await limited_failures(gateway) == 1
    assert not any(key in line for key in KEYS.values() for line in gateway.lines)


async def test_a_caller_past_max_in_flight_is_refused_at_once_while_another_is_served(
    gateway: GatewayProcess, upstream: Upstream
) -> None:
    url = gateway.wait_ready()
    answers: list[str] = []
    before = len(gateway.events("gateway.call"))
    async with (
        keyed(url, KEYS["alice"], "2026-07-28") as alice,
        keyed(url, KEYS["bob"], "legacy") as bob,
        anyio.create_task_group() as tasks,
    ):

        async def slow() -> None:
            answers.append(text(await alice.call_tool("tasks__slow", {"seconds": 120})))

        async def holding_its_calls() -> bool:
            return await in_flight(gateway, "tasks") == IN_FLIGHT

        for _ in range(IN_FLIGHT):
            tasks.start_soon(slow)
        await eventually(holding_its_calls)
        # Refused at once: a call queued behind the slow ones would wait for ever.
        with anyio.fail_after(60):
            refused = await alice.call_tool("tasks__list_tasks", {})
        assert refused.is_error
        assert text(refused) == (
            f"This caller has {IN_FLIGHT} calls running, the most its profile allows at once; "
            "call again in 1 second(s), or once one has answered."
        )
        with anyio.fail_after(60):
            assert "water the plants" in text(await bob.call_tool("tasks__list_tasks", {}))
        assert upstream.calls == IN_FLIGHT + 1  # the slow ones and bob's
        assert answers == []
        RELEASE.set()
    assert answers == ['{"result": "slow done"}'] * IN_FLIGHT
    async with keyed(url, KEYS["alice"], "2026-07-28") as alice:
        assert "water the plants" in text(await alice.call_tool("tasks__list_tasks", {}))
    lines = await logged(gateway, "gateway.call", before, IN_FLIGHT + 3)
    outcomes = sorted((line["caller"], line["tool"], line["outcome"]) for line in lines)
    assert outcomes == sorted(
        [
            ("alice", "tasks__list_tasks", LIMITED),
            ("bob", "tasks__list_tasks", "ok"),
            *[("alice", "tasks__slow", "ok")] * IN_FLIGHT,
            ("alice", "tasks__list_tasks", "ok"),
        ]
    )


def test_a_limits_storage_from_an_unset_variable_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(
        '[[sources]]\nname = "tasks"\nmcp = "http://127.0.0.1:9/mcp"\n'
        '[serve]\nlimits_storage = "${NO_SUCH_REDIS_URL}"\n[auth]\ntype = "none"\n'
        '[policy]\nallow = ["tasks__*"]\n'
    )
    said = refused_to_start(path, env={})
    assert "[serve] limits_storage: set the environment variable NO_SUCH_REDIS_URL" in said
