"""What the gateway serves when an upstream's tool names clash or were cleaned, and what of the
configuration's ``${VAR}`` a caller or a server can steer: a real gateway process over real SDK
servers, with real SDK clients."""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from amends_toolkit import NameClash
from amends_toolkit.cli._config import load_config
from amends_toolkit.cli._gateway import (
    MAX_CLASHES_SHOWN,
    MAX_CLASHING_SHOWN,
    MAX_TOOL_NAME_SHOWN,
    Gateway,
)
from amends_toolkit.cli._output import Output
from amends_toolkit.runtime._assembly import tool_name
from conformance._servers import serve

from .gateway import GatewayProcess, eventually
from .test_gateway import text
from .upstream import CLASHING, LONG_NAME, NOTES_DOCUMENT, names_app, notes_app

pytestmark = pytest.mark.anyio

TOKEN = "the-tasks-token"


def write_config(directory: Path, tasks_port: int, notes_port: int, policy: str) -> Path:
    (directory / "notes.json").write_text(json.dumps(NOTES_DOCUMENT))
    config = directory / "gateway.toml"
    config.write_text(
        f"""
[[sources]]
name = "tasks"
mcp = "http://127.0.0.1:{tasks_port}/mcp"
headers = {{ Authorization = "Bearer ${{TASKS_TOKEN}}" }}

[[sources]]
name = "notes"
openapi = "notes.json"
base_url = "http://127.0.0.1:{notes_port}"

[policy]
{policy}

[auth]
type = "none"
"""
    )
    return config


class Headers:
    """ASGI middleware: the ``Authorization`` header of each request the upstream receives."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state
        self.seen: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.extend(v.decode() for k, v in scope["headers"] if k == b"authorization")
        await self.app(scope, receive, send)


@pytest.fixture
def names(request: pytest.FixtureRequest) -> Iterator[tuple[Headers, int, int]]:
    """The upstream ``tasks`` (``names_app``; clashing from the start when the test's
    parameter says so) and ``notes``."""
    app = Headers(names_app(clashing=getattr(request, "param", False)))
    with serve(app) as tasks_port, serve(notes_app()) as notes_port:
        yield app, tasks_port, notes_port


def start(
    directory: Path, ports: tuple[int, int], policy: str, env: dict[str, str] | None = None
) -> GatewayProcess:
    config = write_config(directory, *ports, policy=policy)
    return GatewayProcess(config, env={"TASKS_TOKEN": TOKEN} if env is None else env)


@pytest.fixture
def gateways() -> Iterator[list[GatewayProcess]]:
    """Gateways a test starts: stopped (killed if need be) when it ends."""
    started: list[GatewayProcess] = []
    yield started
    for process in started:
        process.close()


async def listed(url: str) -> set[str]:
    async with Client(url, cache=None) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def called(url: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """What the tool answered, read as JSON."""
    async with Client(url, cache=None) as client:
        result: types.CallToolResult = await client.call_tool(name, arguments or {})
        assert not result.is_error, text(result)
        return json.loads(text(result))


async def unknown(url: str, *names: str) -> None:
    """Each name is no tool of the gateway's: a call is refused (-32602 "Unknown tool")."""
    async with Client(url, cache=None) as client:
        for name in names:
            with pytest.raises(MCPError, match="Unknown tool"):
                await client.call_tool(name, {})


async def refresh(gateway: GatewayProcess) -> None:
    """SIGHUP, and wait until a refresh after it is logged."""
    count = len(gateway.events("gateway.refreshed"))
    gateway.process.send_signal(signal.SIGHUP)
    await eventually(lambda: alive_or_logged(gateway, "gateway.refreshed", count + 1))


def alive_or_logged(gateway: GatewayProcess, event: str, count: int = 1) -> bool:
    """Whether the event was logged ``count`` times; fails at once when the gateway exited."""
    assert gateway.process.poll() is None, "the gateway exited:\n" + "\n".join(gateway.lines)
    return len(gateway.events(event)) >= count


# A clash of cleaned names (issue 27, item 4).


async def test_a_refresh_that_meets_a_clash_keeps_serving_the_tools_of_before(
    names: tuple[Headers, int, int], tmp_path: Path, gateways: list[GatewayProcess]
) -> None:
    app, *ports = names
    gateway = start(tmp_path, (ports[0], ports[1]), 'allow = ["tasks__*", "notes__*"]')
    gateways.append(gateway)
    url = gateway.wait_ready()
    before = await listed(url)
    assert {"tasks__list_tasks", "tasks__add_clash", "notes__listNotes"} <= before

    # The upstream adds list.tasks and says so: the gateway refreshes, no operator involved.
    assert await called(url, "tasks__add_clash") == {"result": "clashing"}
    await eventually(lambda: alive_or_logged(gateway, "gateway.name_clash"))

    clash = gateway.events("gateway.name_clash")[0]
    assert clash["level"] == "warning"
    assert clash["served"] == "previous"
    assert clash["clashes"] == [
        {
            "name": "tasks__list_tasks",
            "tools": [
                {"source": "tasks", "tool": "list_tasks"},
                {"source": "tasks", "tool": CLASHING},
            ],
        }
    ]
    assert await listed(url) == before
    assert await called(url, "tasks__list_tasks") == {"result": ["water the plants", "buy bread"]}
    assert await called(url, "notes__listNotes") == [{"id": 1, "text": "call Ana"}]
    assert any("clash" in line and not line.startswith("{") for line in gateway.lines)

    # Once the upstream takes the clash away, the next refresh serves its catalog again.
    app.state.mcp.remove_tool(CLASHING)
    app.state.mcp.remove_tool("echo")
    await refresh(gateway)
    assert await listed(url) == before - {"tasks__echo"}
    assert gateway.stop() == 0


async def test_a_source_that_fails_to_list_after_a_clash_keeps_the_catalog_served_before(
    tmp_path: Path, gateways: list[GatewayProcess]
) -> None:
    with serve(notes_app()) as notes_port:
        with serve(names_app()) as tasks_port:
            gateway = start(tmp_path, (tasks_port, notes_port), 'allow = ["tasks__*", "notes__*"]')
            gateways.append(gateway)
            url = gateway.wait_ready()
            before = await listed(url)
            assert await called(url, "tasks__add_clash") == {"result": "clashing"}
            await eventually(lambda: alive_or_logged(gateway, "gateway.name_clash"))
        # The upstream is gone: its listing fails, and its last good catalog is assembled.
        await refresh(gateway)
        assert gateway.events("gateway.discover_failed")[0]["source"] == "tasks"
        assert gateway.events("gateway.refreshed")[0]["changed"] is False
        assert len(gateway.events("gateway.name_clash")) == 1
        assert await listed(url) == before
        assert gateway.stop() == 0


def test_a_clash_is_logged_and_told_within_bounds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config(write_config(tmp_path, 1, 2, 'allow = ["tasks__*"]'))
    gateway = Gateway(config, output=Output())
    tail = "\u202e\n" + "x" * 10_000  # a bidi mark, a line break, and far too long
    clash = NameClash(
        {f"tasks__t{i}": [("tasks", f"t{i}.{j}{tail}") for j in range(10)] for i in range(30)}
    )
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    gateway._clashed(clash, refresh=True)
    gateway._clashed(clash, refresh=True)  # the next refresh: logged, not told again

    first, second = (r for r in caplog.records if r.getMessage() == "gateway.name_clash")
    logged: Any = first.__dict__
    assert logged["count"] == 30
    assert len(logged["clashes"]) == MAX_CLASHES_SHOWN
    assert {len(c["tools"]) for c in logged["clashes"]} == {MAX_CLASHING_SHOWN}
    assert {len(t["tool"]) for c in logged["clashes"] for t in c["tools"]} == {MAX_TOOL_NAME_SHOWN}
    assert second.__dict__["clashes"] == logged["clashes"]
    told = capsys.readouterr().err
    assert told.count("clash") == 1
    assert "; and 20 more" in told
    assert len(told) < 10_000  # whole, it would be 3 MB
    assert "\u202e" not in told
    assert told.count("\n") == 1


@pytest.mark.parametrize("names", [True], indirect=True)
async def test_a_start_with_a_clash_serves_the_rest_and_says_what_it_left_out(
    names: tuple[Headers, int, int], tmp_path: Path, gateways: list[GatewayProcess]
) -> None:
    _, *ports = names
    gateway = start(tmp_path, (ports[0], ports[1]), 'allow = ["tasks__*", "notes__*"]')
    gateways.append(gateway)
    url = gateway.wait_ready()

    served = await listed(url)
    assert "tasks__list_tasks" not in served
    assert {"tasks__echo", "tasks__admin_delete", "notes__listNotes"} <= served
    assert await called(url, "notes__listNotes") == [{"id": 1, "text": "call Ana"}]
    assert await called(url, "tasks__echo", {"text": "hello"}) == {"result": "hello"}
    await unknown(url, "tasks__list_tasks")

    (clash,) = gateway.events("gateway.name_clash")
    assert clash["served"] == "rest"
    assert clash["clashes"][0]["name"] == "tasks__list_tasks"
    notes = [line for line in gateway.lines if "clash" in line and not line.startswith("{")]
    assert len(notes) == 1
    assert "tasks__list_tasks" in notes[0]
    assert CLASHING in notes[0]
    assert gateway.stop() == 0


# Block patterns written with the upstream's names (issue 27, item 10).

LONG_SERVED = tool_name("tasks", LONG_NAME)


async def test_block_patterns_in_upstream_names_block_cleaned_and_cut_names(
    names: tuple[Headers, int, int], tmp_path: Path, gateways: list[GatewayProcess]
) -> None:
    app, *ports = names
    policy = (
        'allow = ["tasks__*", "notes__*"]\n'
        f'block = ["tasks__admin.delete", "{LONG_NAME}", "tasks__no_such_tool"]'
    )
    gateway = start(tmp_path, (ports[0], ports[1]), policy)
    gateways.append(gateway)
    url = gateway.wait_ready()

    served = await listed(url)
    assert f"tasks__{LONG_NAME}" != LONG_SERVED  # cut
    assert "tasks__admin_delete" not in served
    assert LONG_SERVED not in served
    assert {"tasks__list_tasks", "notes__listNotes"} <= served
    await unknown(url, "tasks__admin_delete", "tasks__admin.delete", LONG_SERVED, LONG_NAME)

    (unmatched,) = gateway.events("gateway.pattern_unmatched")
    assert unmatched["level"] == "warning"
    assert unmatched["patterns"] == ["block: tasks__no_such_tool"]
    notes = [line for line in gateway.lines if "match no tool" in line]
    assert len(notes) == 1
    assert "tasks__no_such_tool" in notes[0]

    # A refresh warns of a pattern once, when it has begun to match nothing.
    await refresh(gateway)
    assert len(gateway.events("gateway.pattern_unmatched")) == 1
    app.state.mcp.remove_tool("admin.delete")
    await refresh(gateway)
    await refresh(gateway)
    assert [e["patterns"] for e in gateway.events("gateway.pattern_unmatched")] == [
        ["block: tasks__no_such_tool"],
        ["block: tasks__admin.delete"],
    ]
    assert gateway.stop() == 0


# ${VAR} in the configuration: the environment at start, and nothing else (held).


async def test_a_header_variable_is_the_environment_at_start_and_nothing_a_caller_or_server_says(
    names: tuple[Headers, int, int], tmp_path: Path, gateways: list[GatewayProcess]
) -> None:
    app, *ports = names
    # A value that itself looks like a template is sent as it is: no second expansion.
    env = {"TASKS_TOKEN": "${OTHER_TOKEN}", "OTHER_TOKEN": "must-not-be-sent"}
    gateway = start(tmp_path, (ports[0], ports[1]), 'allow = ["tasks__*"]', env=env)
    gateways.append(gateway)
    url = gateway.wait_ready()

    # A caller's input and a server's answer that name a variable stay text.
    for template in ("${TASKS_TOKEN}", "Bearer ${TASKS_TOKEN}", "${HOME}"):
        assert await called(url, "tasks__echo", {"text": template}) == {"result": template}
    assert app.seen
    assert set(app.seen) == {"Bearer ${OTHER_TOKEN}"}
    assert not any("must-not-be-sent" in line for line in gateway.lines)
    assert gateway.stop() == 0


async def test_a_header_variable_that_is_not_set_keeps_the_gateway_from_starting(
    names: tuple[Headers, int, int], tmp_path: Path, gateways: list[GatewayProcess]
) -> None:
    app, *ports = names
    gateway = start(tmp_path, (ports[0], ports[1]), 'allow = ["tasks__*"]', env={})
    gateways.append(gateway)
    with pytest.raises(AssertionError, match="did not start"):
        gateway.wait_ready()
    assert gateway.process.wait(30) == 1
    assert any(
        "header 'Authorization' needs the environment variable TASKS_TOKEN, which is not set"
        in line
        for line in gateway.lines
    )
    assert not app.seen  # nothing was sent
