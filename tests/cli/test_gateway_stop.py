"""SIGTERM stops a gateway cleanly: new calls refused, a running call finishes, processes end."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from conformance._servers import serve

from .gateway import GatewayProcess, eventually
from .test_gateway import text, write_config
from .upstream import notes_app, tasks_app

pytestmark = pytest.mark.anyio


RELEASE = threading.Event()
"""Set when the test is done with the gateway stopping mid-call: the slow call then answers."""


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    RELEASE.clear()
    with serve(tasks_app(RELEASE)) as tasks_port, serve(notes_app()) as notes_port:
        config = write_config(tmp_path, tasks_port, notes_port, grace=20)
        process = GatewayProcess(config, env={"TASKS_TOKEN": "the-tasks-token"})
        try:
            process.wait_ready()
            yield process
        finally:
            RELEASE.set()  # a test that failed mid-call leaves no call waiting
            process.close()


async def in_flight(gateway: GatewayProcess, source: str) -> bool:
    """Whether the source's actor runs a call now, as ``/metrics`` says."""
    async with httpx.AsyncClient() as http:
        exposition = (await http.get(f"{gateway.base}/metrics")).text
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "amends_actor_in_flight" and sample.labels["source"] == source:
                return sample.value >= 1
    raise AssertionError("no in-flight gauge")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_sigterm_mid_call_lets_the_call_finish_and_stops_everything(
    gateway: GatewayProcess,
) -> None:
    url = gateway.wait_ready()
    (stdio,) = gateway.events("mcp.stdio_started")
    assert alive(stdio["pid"])
    answers: list[types.CallToolResult] = []

    async with (
        Client(url, mode="legacy", cache=None) as running,
        Client(url, cache=None) as latecomer,
        anyio.create_task_group() as tasks,
    ):
        # Listed first: the SDK's client lists the tools after a call's answer to check it
        # against a tool's output schema it has not seen, and by then the gateway, its last
        # call done, has stopped listening (on a busy machine, before that listing connects).
        await running.list_tools()

        async def slow_call() -> None:
            answers.append(await running.call_tool("tasks__slow", {"seconds": 60}))

        tasks.start_soon(slow_call)
        await eventually(lambda: in_flight(gateway, "tasks"))
        gateway.process.send_signal(signal.SIGTERM)
        await eventually(lambda: any("stopping" in line for line in gateway.lines))
        refused = await latecomer.call_tool("tasks__list_tasks", {})
        assert refused.is_error
        assert "stopping" in text(refused)
        RELEASE.set()  # the running call ends now, and the gateway with it
    assert [text(answer) for answer in answers] == ['{"result": "slow done"}']
    assert gateway.stop(timeout=30) == 0
    assert not alive(stdio["pid"])
    assert not any("Traceback" in line for line in gateway.lines)
    assert gateway.events("gateway.stopped")


def test_a_gateway_process_closed_midway_leaves_no_process_and_no_open_pipe(
    tmp_path: Path,
) -> None:
    # What a failed test's fixture does: a pipe left open is a ResourceWarning in a later test.
    config = tmp_path / "gateway.toml"
    config.write_text('[[sources]]\nname = "x"\n')
    process = GatewayProcess(config)
    process.close()
    assert process.process.returncode is not None
    assert process.process.stderr is not None
    assert process.process.stderr.closed
