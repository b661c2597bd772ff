"""``/healthz``: ready once every source was tried and the gateway has tools to serve.

A balancer sends agents only to a gateway that can answer a call: not to one whose every source
failed (it serves nothing), but to one whose source is down a while after serving tools (its
calls may fail, and the body says which source). Each test runs a real gateway process over
real upstream servers, one of them taken down or never up.
"""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest

from conformance._servers import closed_port, serve

from .gateway import GatewayProcess, eventually
from .upstream import tasks_app

pytestmark = pytest.mark.anyio

DOWN = (
    "failed: UnavailableError: The tool source is unavailable right now; try again later. "
    "See gateway.discover_failed in the log."
)


def write_config(directory: Path, **ports: int) -> Path:
    config = directory / "gateway.toml"
    config.write_text(
        "".join(
            f'[[sources]]\nname = "{name}"\nmcp = "http://127.0.0.1:{port}/mcp"\ntimeout = 5\n\n'
            for name, port in ports.items()
        )
        + '[policy]\nallow = ["*__list_tasks"]\n\n[auth]\ntype = "none"\n'
    )
    return config


async def health(gateway: GatewayProcess) -> tuple[int, dict[str, object]]:
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"{gateway.base}/healthz")
    return answer.status_code, answer.json()


async def test_a_gateway_whose_every_source_failed_is_not_ready_and_says_why(
    tmp_path: Path,
) -> None:
    gateway = GatewayProcess(write_config(tmp_path, tasks=closed_port()))
    try:
        gateway.wait_ready()
        assert await health(gateway) == (
            503,
            {
                "ready": False,
                "why": "no source has tools to serve: 1 of 1 failed",
                "sources": {"tasks": DOWN},
                "tools": 0,
            },
        )
        # The pattern matches no tool, and the operator is told whose tools are not known yet.
        [note] = [line for line in gateway.lines if "match no tool" in line]
        assert note.endswith(
            "[policy] patterns that match no tool: allow: *__list_tasks (not discovered yet: tasks)"
        )
        [unmatched] = gateway.events("gateway.pattern_unmatched")
        assert unmatched["undiscovered"] == ["tasks"]
    finally:
        gateway.stop()


async def test_a_gateway_with_one_source_failed_beside_one_that_serves_is_ready(
    tmp_path: Path,
) -> None:
    with serve(tasks_app()) as port:
        gateway = GatewayProcess(write_config(tmp_path, tasks=port, other=closed_port()))
        try:
            gateway.wait_ready()
            assert await health(gateway) == (
                200,
                {"ready": True, "sources": {"tasks": "ok", "other": DOWN}, "tools": 1},
            )
        finally:
            gateway.stop()


async def test_a_source_down_after_it_served_keeps_the_gateway_ready(tmp_path: Path) -> None:
    # Its last tools are served on: calls fail until it is back, others' calls answer.
    with serve(tasks_app()) as port:
        gateway = GatewayProcess(write_config(tmp_path, tasks=port))
        gateway.wait_ready()
    try:
        gateway.process.send_signal(signal.SIGHUP)  # a refresh, which finds it down
        await eventually(lambda: bool(gateway.events("gateway.discover_failed")))
        await eventually(lambda: bool(gateway.events("gateway.refreshed")))
        assert await health(gateway) == (
            200,
            {"ready": True, "sources": {"tasks": DOWN}, "tools": 1},
        )
    finally:
        gateway.stop()
