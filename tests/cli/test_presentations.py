"""``[serve] presentation``: the gateway serves tool search or code mode in place of the tools.

The gateway runs in this process here (``Gateway.run``, as ``serve`` runs it, stopped as SIGTERM
stops it) over a stdio source, with the official SDK's client calling it over loopback.
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
import mcp_types as types
import pytest
from mcp import Client

from amends_toolkit.cli._config import load_config
from amends_toolkit.cli._gateway import Gateway
from amends_toolkit.cli._output import Output
from amends_toolkit.presentations import SearchIndex
from amends_toolkit.presentations._index import Hits
from amends_toolkit.presentations._search import MAX_QUERY_LENGTH

from .gateway import grower_config

pytestmark = pytest.mark.anyio


def text(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("presentation", ["search", "code"])
async def test_the_gateway_serves_a_presentation(tmp_path: Path, presentation: str) -> None:
    config = grower_config(
        tmp_path, allow=("grower__add",), block=("grower__grow",), port=0, presentation=presentation
    )
    gateway = Gateway(load_config(config), output=Output())
    async with anyio.create_task_group() as tasks:
        port = await tasks.start(gateway.run)
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            if presentation == "search":
                assert listed == ["tool_search", "tool_call"]
                found = await client.call_tool("tool_search", {"query": "add two integers"})
                assert [t["name"] for t in json.loads(text(found))["tools"]] == ["grower__add"]
                added = await client.call_tool(
                    "tool_call", {"name": "grower__add", "input": {"a": 2, "b": 3}}
                )
            else:
                assert listed == ["execute"]
                added = await client.call_tool(
                    "execute", {"code": 'return await tools.grower__add({"a": 2, "b": 3})'}
                )
            assert not added.is_error, text(added)
            assert '"result": 5' in text(added)
        gateway.stop(reason="the test is done")


async def test_healthz_answers_while_a_search_of_the_longest_query_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The search is held in its ranking until /healthz has answered. Ranked on the event loop,
    # it would hold the loop too: /healthz could not answer, and the search would give up.
    begun, released = threading.Event(), threading.Event()
    rank = SearchIndex.rank

    def held(index: SearchIndex, query: str, limit: int) -> Hits:
        begun.set()
        if not released.wait(20):
            raise AssertionError("the search held the event loop")
        return rank(index, query, limit)

    monkeypatch.setattr(SearchIndex, "rank", held)
    config = grower_config(tmp_path, port=0, presentation="search")
    # distinct words of letters, all but the first no tool's, up to the longest query
    query = " ".join(["add", *("".join(word) for word in itertools.product("bcdfg", repeat=4))])
    query = query[:MAX_QUERY_LENGTH]
    gateway = Gateway(load_config(config), output=Output())
    async with anyio.create_task_group() as tasks:
        port = await tasks.start(gateway.run)
        found: list[types.CallToolResult] = []

        async def search() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
                found.append(await client.call_tool("tool_search", {"query": query, "limit": 1}))
            gateway.stop(reason="the test is done")

        tasks.start_soon(search)
        assert await anyio.to_thread.run_sync(begun.wait, 20), "the search never began"
        async with httpx.AsyncClient() as http:
            health = await http.get(f"http://127.0.0.1:{port}/healthz")
        released.set()
    assert health.status_code == 200
    [answer] = found
    assert not answer.is_error, text(answer)
    assert [t["name"] for t in json.loads(text(answer))["tools"]] == ["grower__add"]
