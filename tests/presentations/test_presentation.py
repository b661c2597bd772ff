from __future__ import annotations

import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

from .sources import ID, Recording, allow_all, define

pytestmark = pytest.mark.anyio


def tasks(
    source: Recording | None = None, names: tuple[str, ...] = ("list", "get", "close")
) -> at.Toolkit:
    source = source or Recording("tasks")
    return at.assemble(
        [at.Member(source, [define(name, schema=ID if name == "get" else None) for name in names])],
        allow_all,
    )


async def test_call_gives_the_tools_result_as_json() -> None:
    source = Recording("tasks")
    assert await at.presentation.call(tasks(source), "tasks__get", {"id": 2}) == {
        "tool": "get",
        "input": {"id": 2},
    }
    assert source.calls == [("get", {"id": 2})]


async def test_a_tool_that_gives_nothing_gives_none() -> None:
    async def nothing(input: JsonObject) -> JsonValue:
        return None

    toolkit = tasks(Recording("tasks", {"close": nothing}))
    assert await at.presentation.call(toolkit, "tasks__close", {}) is None


async def test_call_raises_the_failure_of_an_unknown_name() -> None:
    with pytest.raises(at.Failure) as raised:
        await at.presentation.call(tasks(), "tasks__nope", {})
    assert raised.value.code == "NotFoundError"


async def test_call_raises_the_failure_of_a_refused_input_and_the_tool_does_not_run() -> None:
    source = Recording("tasks")
    with pytest.raises(at.Failure) as raised:
        await at.presentation.call(tasks(source), "tasks__get", {"id": "two"})
    assert raised.value.code == "InvalidInputError"
    assert source.calls == []


async def test_call_raises_the_tools_failure_with_the_sources_error_as_its_cause() -> None:
    async def down(input: JsonObject) -> JsonValue:
        raise at.UnavailableError(source="tasks", retry_after=3)

    toolkit = tasks(Recording("tasks", {"list": down}))
    with pytest.raises(at.Failure) as raised:
        await at.presentation.call(toolkit, "tasks__list", {})
    assert raised.value == at.UnavailableError(source="tasks").to_failure()
    assert raised.value.retryable is True
    assert isinstance(raised.value.__cause__, at.UnavailableError)


async def test_restrict_keeps_only_the_named_tools_in_the_toolkits_order() -> None:
    source = Recording("tasks")
    restricted = at.presentation.restrict(tasks(source), ["tasks__close", "tasks__list"])
    assert list(restricted.tools) == ["tasks__list", "tasks__close"]
    assert await restricted.call("tasks__close", {}) == {"tool": "close", "input": {}}
    answer = await restricted.call("tasks__get", {"id": 1})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "NotFoundError"
    assert source.calls == [("close", {})]


async def test_a_restricted_tool_runs_as_in_its_toolkit() -> None:
    toolkit = at.assemble(
        [at.Member(Recording("db"), [define("write", schema=ID)])], lambda _, d: "approve"
    )
    restricted = at.presentation.restrict(toolkit, ["db__write"])
    assert restricted.tools["db__write"] == toolkit.tools["db__write"]
    assert restricted.tools["db__write"].needs_approval is True
    assert restricted.source_tool("db__write") == ("db", "write")
    assert await restricted.call("db__write", {"id": "x"}) == await toolkit.call(
        "db__write", {"id": "x"}
    )


def test_restrict_names_every_tool_it_does_not_have() -> None:
    with pytest.raises(ValueError, match=r"'tasks__a', 'tasks__b'"):
        at.presentation.restrict(tasks(), ["tasks__list", "tasks__b", "tasks__a"])


def test_restrict_refuses_a_single_string_for_names() -> None:
    with pytest.raises(TypeError, match="collection of tool names"):
        at.presentation.restrict(tasks(), "tasks__list")


async def test_merge_holds_the_tools_of_both_each_running_as_in_its_own() -> None:
    first, second = Recording("tasks"), Recording("mail")
    merged = at.presentation.merge(
        tasks(first), at.assemble([at.Member(second, [define("send")])], allow_all)
    )
    assert list(merged.tools) == ["tasks__list", "tasks__get", "tasks__close", "mail__send"]
    assert await merged.call("mail__send", {}) == {"tool": "send", "input": {}}
    assert await merged.call("tasks__list", {}) == {"tool": "list", "input": {}}
    assert first.calls == [("list", {})]
    assert second.calls == [("send", {})]


def test_merge_takes_a_tool_both_hold_once() -> None:
    toolkit = tasks()
    merged = at.presentation.merge(
        at.presentation.restrict(toolkit, ["tasks__list", "tasks__get"]),
        at.presentation.restrict(toolkit, ["tasks__get", "tasks__close"]),
    )
    assert list(merged.tools) == ["tasks__list", "tasks__get", "tasks__close"]


def test_a_clash_of_names_in_merge_is_a_clear_error() -> None:
    one = tasks(Recording("tasks"))
    other = tasks(Recording("tasks"), names=("list", "open"))
    with pytest.raises(at.NameClash) as raised:
        at.presentation.merge(one, other)
    assert list(raised.value.clashes) == ["tasks__list"]
    assert "rename a source" in str(raised.value)


async def test_a_search_over_a_merged_toolkit_finds_the_tools_of_both() -> None:
    merged = at.presentation.merge(
        tasks(), at.assemble([at.Member(Recording("mail"), [define("send")])], allow_all)
    )
    answer = await at.tool_search(merged).call("tool_search", {"query": "send"})
    assert isinstance(answer, dict)
    assert answer["available"] == 4
    assert answer["tools"] == [
        {"name": "mail__send", "description": "the send tool", "inputSchema": {"type": "object"}}
    ]
