from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from trio.testing import MockClock


@pytest.fixture
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio by default; trio with a virtual clock for tests marked ``virtual_clock``."""
    if request.node.get_closest_marker("virtual_clock"):
        return ("trio", {"clock": MockClock(autojump_threshold=0)})
    return "asyncio"


@pytest.fixture(params=["UTC", "America/New_York"])
def machine_zone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The process's local time zone set to each of two zones (``TZ`` and ``time.tzset``)."""
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()
