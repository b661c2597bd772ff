from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from amends_toolkit.testing import virtual_clock


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``both_backends`` runs on asyncio and on trio (see ``anyio_backend``)."""
    if "anyio_backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_backends"
    ):
        metafunc.parametrize("anyio_backend", ["asyncio", "trio"], indirect=True)


@pytest.fixture
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio by default, both backends for tests marked ``both_backends``; trio with a virtual
    clock for tests marked ``virtual_clock``."""
    if request.node.get_closest_marker("virtual_clock"):
        return virtual_clock()
    return getattr(request, "param", "asyncio")


@pytest.fixture(params=["UTC", "America/New_York"])
def machine_zone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The process's local time zone set to each of two zones (``TZ`` and ``time.tzset``)."""
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()
