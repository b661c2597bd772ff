"""``[serve] presentation``: the gateway serves tool search or code mode in place of the tools.

The gateway runs in this process here (``Gateway.run``, as ``serve`` runs it, stopped as SIGTERM
stops it) over a stdio source, with the official SDK's client calling it over loopback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from amends_toolkit.cli._config import load_config
from amends_toolkit.cli._gateway import Gateway
from amends_toolkit.cli._output import Output

pytestmark = pytest.mark.anyio

UPSTREAM = Path(__file__).with_name("upstream.py")


def text(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("presentation", ["search", "code"])
async def test_the_gateway_serves_a_presentation(tmp_path: Path, presentation: str) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        f"""
[[sources]]
name = "grower"
stdio = [{json.dumps(sys.executable)}, {json.dumps(str(UPSTREAM))}, "stdio"]
env = {{ PYTHONPATH = {json.dumps(os.pathsep.join(sys.path))} }}

[policy]
allow = ["grower__add"]
block = ["grower__grow"]

[serve]
port = 0
presentation = "{presentation}"

[auth]
type = "none"
"""
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
