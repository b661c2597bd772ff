"""Sources built from ``[[sources]]`` tables, with the client the gateway gives each."""

from __future__ import annotations

import json
import socket
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.cli._config import SourceConfig
from amends_toolkit.cli._sources import build_source

pytestmark = pytest.mark.anyio

DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Slow", "version": "1"},
    "paths": {
        "/ping": {"get": {"operationId": "ping", "responses": {"200": {"description": "Pong."}}}}
    },
}


@pytest.mark.virtual_clock
@pytest.mark.parametrize("configured", [None, 45.0], ids=["default", "configured"])
async def test_an_openapi_source_waits_its_own_timeout_not_a_shorter_one_of_its_client(
    tmp_path: Path, configured: float | None
) -> None:
    # An answer slower than httpx's default of 5 seconds is an answer: the table's timeout (or
    # the source's 30 seconds) is the call's one deadline.
    document = tmp_path / "slow.json"
    document.write_text(json.dumps(DOCUMENT))
    # Listening, so the kernel takes the connection and the request; nobody ever answers.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        config = SourceConfig(
            name="slow",
            kind="openapi",
            target=str(document),
            base_url=f"http://127.0.0.1:{silent.getsockname()[1]}",
            timeout=configured,
        )
        async with AsyncExitStack() as stack:
            source = (await build_source(config, stack)).source
            started = anyio.current_time()
            with pytest.raises(at.UnavailableError) as caught:
                await source.call("ping", {})
            waited = anyio.current_time() - started
    assert waited == pytest.approx(configured or 30.0)
    assert "no answer within" in str(caught.value)
