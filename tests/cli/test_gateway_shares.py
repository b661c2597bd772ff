"""One client cannot take every slot of a source: each caller has its share (``[serve]
max_in_flight_per_caller``), and another client's call runs while the first holds its own."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from amends_toolkit.cli._config import ServeConfig
from conformance._servers import serve

from .gateway import GatewayProcess, eventually
from .test_gateway import text, write_config
from .upstream import notes_app, tasks_app

pytestmark = pytest.mark.anyio

RELEASE = threading.Event()
"""Set when the test is done holding the slow calls: they answer then."""


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    RELEASE.clear()
    with serve(tasks_app(RELEASE)) as tasks_port, serve(notes_app()) as notes_port:
        config = write_config(tmp_path, tasks_port, notes_port)
        process = GatewayProcess(config, env={"TASKS_TOKEN": "the-tasks-token"})
        try:
            process.wait_ready()
            yield process
        finally:
            RELEASE.set()  # a test that failed mid-call leaves no call waiting
            process.stop()


async def in_flight(gateway: GatewayProcess, source: str) -> float:
    """The calls a source's actor runs now, as ``/metrics`` says."""
    async with httpx.AsyncClient() as http:
        exposition = (await http.get(f"{gateway.base}/metrics")).text
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "amends_actor_in_flight" and sample.labels["source"] == source:
                return sample.value
    raise AssertionError("no in-flight gauge")


async def test_a_clients_call_runs_while_another_client_holds_its_share_of_slow_calls(
    gateway: GatewayProcess,
) -> None:
    url = gateway.wait_ready()
    share = ServeConfig().max_in_flight_per_caller
    sent = 64 + 4  # more than the source's slots
    answers: list[str] = []
    async with (
        Client(url, cache=None) as hog,  # stateless: a caller by its address
        Client(url, mode="legacy", cache=None) as other,  # a session: a caller by its id
        anyio.create_task_group() as tasks,
    ):

        async def slow() -> None:
            answers.append(text(await hog.call_tool("tasks__slow", {"seconds": 120})))

        async def holding_its_share() -> bool:
            return await in_flight(gateway, "tasks") == share

        for _ in range(sent):
            tasks.start_soon(slow)
        await eventually(holding_its_share)
        # The slow calls hold until released: a call waiting behind them would wait for ever.
        with anyio.fail_after(60):
            fast = await other.call_tool("tasks__list_tasks", {})
        assert not fast.is_error
        assert "water the plants" in text(fast)
        assert answers == []
        assert await in_flight(gateway, "tasks") == share
        RELEASE.set()
    assert answers == ['{"result": "slow done"}'] * sent
