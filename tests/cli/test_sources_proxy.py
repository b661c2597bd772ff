"""A gateway's remote sources honour the proxy the environment names (``HTTP_PROXY`` and
``NO_PROXY``), as a client of httpx's own does, though they share one pool when it names none."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import pytest

import amends_toolkit as at
from amends_toolkit.cli._config import SourceConfig
from amends_toolkit.cli._sources import build_source, proxied
from conformance._servers import serve

pytestmark = pytest.mark.anyio


def recording_proxy(seen: list[str]) -> Any:
    """A proxy that records the absolute URL of each request it is sent and answers 502."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        seen.append(
            f"{scope['method']} {scope['headers'] and dict(scope['headers']).get(b'host', b'').decode()}"
        )
        await send({"type": "http.response.start", "status": 502, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


def mcp_source(url: str) -> SourceConfig:
    return SourceConfig(name="far", kind="mcp", target=url)


@pytest.mark.parametrize("bypassed", [False, True])
async def test_a_proxy_the_environment_names_carries_the_sources_requests(
    bypassed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    with serve(recording_proxy(seen)) as port:
        for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("NO_PROXY", "upstream.invalid" if bypassed else "")
        assert proxied()
        async with AsyncExitStack() as stack, at.Runtime() as runtime:
            built = await build_source(mcp_source("http://upstream.invalid/mcp"), stack)
            source = await runtime.spawn(built.source)
            with pytest.raises(at.ToolSourceError):
                await source.discover()
    # Through the proxy, it is asked for the upstream; bypassed, it is never asked.
    assert seen == [] if bypassed else seen and all("upstream.invalid" in line for line in seen)


def test_without_a_proxy_in_the_environment_the_sources_share_the_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    assert not proxied()
