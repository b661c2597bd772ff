from __future__ import annotations

import pytest
from trio.testing import MockClock


@pytest.fixture
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio by default; trio with a virtual clock for tests marked ``virtual_clock``."""
    if request.node.get_closest_marker("virtual_clock"):
        return ("trio", {"clock": MockClock(autojump_threshold=0)})
    return "asyncio"
