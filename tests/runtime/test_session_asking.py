"""The seam through which a tool running in a Session asks that Session's person mid-call."""

from __future__ import annotations

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit, asking

pytestmark = pytest.mark.anyio


def asks_mid_call(seen: list[object]) -> Toolkit:
    async def handler(input: JsonObject) -> JsonValue:
        ask = asking()
        seen.append(ask)
        if ask is None:
            return "nobody to ask"
        await anyio.sleep(1)  # the tool's own second, counted
        return await ask("inner", input)

    tool = Tool(name="outer", description="", input_schema={"type": "object"})
    return Toolkit.from_entries([ToolEntry(tool=tool, handler=handler)])


async def test_outside_a_session_nobody_can_be_asked() -> None:
    seen: list[object] = []
    assert await asks_mid_call(seen).call("outer", {}) == "nobody to ask"
    assert seen == [None]
    assert asking() is None


@pytest.mark.virtual_clock
async def test_a_call_asks_the_sessions_approve_and_the_wait_is_not_its_time() -> None:
    asked: list[tuple[str, JsonObject]] = []

    async def approve(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        await anyio.sleep(3600)  # the person thinks for an hour
        return input.get("yes") is True

    seen: list[object] = []
    async with at.Session(asks_mid_call(seen), approve=approve, timeout=2) as session:
        started = anyio.current_time()
        assert await session.call("outer", {"yes": True}) is True
        assert await session.call("outer", {}) is False
        assert anyio.current_time() - started == pytest.approx(2 * 3601)
    assert asked == [("inner", {"yes": True}), ("inner", {})]
    assert asking() is None
