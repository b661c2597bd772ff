from __future__ import annotations

import gc
import os
import re
import subprocess
import sys

import pytest

import amends_toolkit as at
from amends_toolkit.runtime import Runtime, validator_for
from amends_toolkit.runtime._assembly import tool_name

from .toolkit_sources import CLOSED, Recording, Untouchable, allow_all, define

pytestmark = pytest.mark.anyio

MODEL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
LONG = "x" * 80
PINNED_FINGERPRINT = "ychm2grv7h"


def test_a_tool_is_named_by_its_source_and_its_own_name() -> None:
    toolkit = at.assemble([at.Member(Recording("github"), [define("create_issue")])], allow_all)
    assert list(toolkit.tools) == ["github__create_issue"]
    tool = toolkit.tools["github__create_issue"]
    assert tool.name == "github__create_issue"
    assert tool.description == "the create_issue tool"
    assert tool.input_schema == {"type": "object"}
    assert toolkit.source_tool("github__create_issue") == ("github", "create_issue")


def test_characters_model_apis_refuse_become_underscores() -> None:
    toolkit = at.assemble(
        [at.Member(Recording("my tasks.v2"), [define("list/tasks"), define("créer:tâche")])],
        allow_all,
    )
    assert list(toolkit.tools) == ["my_tasks_v2__list_tasks", "my_tasks_v2__cr_er_t_che"]
    assert toolkit.source_tool("my_tasks_v2__list_tasks") == ("my tasks.v2", "list/tasks")
    assert all(MODEL_NAME.match(name) for name in toolkit.tools)


def test_dashes_and_underscores_are_kept() -> None:
    assert tool_name("a-b_c", "D-e_F9") == "a-b_c__D-e_F9"


def test_a_name_of_exactly_the_limit_is_not_cut() -> None:
    name = tool_name("s", "t" * 61)
    assert len(name) == 64
    assert name == "s__" + "t" * 61


def test_a_long_name_is_cut_to_64_and_ends_with_a_fingerprint() -> None:
    name = tool_name("source", LONG)
    assert len(name) == 64
    assert MODEL_NAME.match(name)
    assert name.startswith("source__xxxxxxxx")
    assert re.fullmatch(r"source__x{45}_[a-z2-7]{10}", name)


def test_long_names_that_differ_only_after_the_cut_stay_apart() -> None:
    source = Recording("s")
    toolkit = at.assemble([at.Member(source, [define(LONG + "a"), define(LONG + "b")])], allow_all)
    first, second = toolkit.tools
    assert first != second
    assert first[:53] == second[:53]
    assert toolkit.source_tool(first) == ("s", LONG + "a")
    assert toolkit.source_tool(second) == ("s", LONG + "b")


@pytest.mark.parametrize("limit", [16, 20, 40])
def test_a_smaller_limit_cuts_names_to_it(limit: int) -> None:
    toolkit = at.assemble(
        [
            at.Member(
                Recording("source"),
                [define("a_rather_long_tool_name_to_be_cut_" + c) for c in "ab"],
            )
        ],
        allow_all,
        max_name_length=limit,
    )
    names = list(toolkit.tools)
    assert all(len(name) <= limit and MODEL_NAME.match(name) for name in names)
    assert len(set(names)) == 2
    assert all(len(name) == limit for name in names)  # each is 44 long before the cut


def test_a_short_name_is_left_whole_under_a_smaller_limit() -> None:
    assert tool_name("a", "b", max_name_length=16) == "a__b"


@pytest.mark.parametrize("limit", [15, 0, -1])
def test_a_limit_below_16_is_a_clear_error(limit: int) -> None:
    with pytest.raises(ValueError, match="at least 16"):
        at.assemble([], allow_all, max_name_length=limit)
    with pytest.raises(ValueError, match="at least 16"):
        tool_name("a", "b", max_name_length=limit)


def test_a_limit_that_is_not_an_int_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="max_name_length must be an int"):
        at.assemble([], allow_all, max_name_length=32.0)  # type: ignore[arg-type]


def test_the_fingerprint_is_pinned() -> None:
    # The same name in every process and every release: a host stores approvals by these names.
    assert tool_name("source", LONG) == "source__" + "x" * 45 + "_" + PINNED_FINGERPRINT
    assert tool_name("source", LONG, max_name_length=16) == "sourc_" + PINNED_FINGERPRINT


def test_the_fingerprint_is_the_same_in_another_process() -> None:
    code = (
        "from amends_toolkit.runtime._assembly import tool_name\n"
        f"print(tool_name('source', {LONG!r}))\n"
        "print(tool_name('s', 'é' * 90, max_name_length=20))"
    )
    expected = [tool_name("source", LONG), tool_name("s", "é" * 90, max_name_length=20)]
    for seed in ("1", "2"):
        run = subprocess.run(
            [sys.executable, "-c", code],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert run.stdout.split() == expected


def test_clashes_are_reported_all_at_once() -> None:
    members = [
        at.Member(Recording("a.b"), [define("x"), define("y")]),
        at.Member(Recording("a_b"), [define("x"), define("y"), define("z")]),
        at.Member(Recording("a-b"), [define("x")]),
    ]
    with pytest.raises(at.NameClash) as caught:
        at.assemble(members, allow_all)
    assert caught.value.clashes == {
        "a_b__x": (("a.b", "x"), ("a_b", "x")),
        "a_b__y": (("a.b", "y"), ("a_b", "y")),
    }
    assert "2 tool name(s) clash" in str(caught.value)


def test_a_source_listing_one_name_twice_clashes() -> None:
    with pytest.raises(at.NameClash) as caught:
        at.assemble([at.Member(Recording("s"), [define("t"), define("t")])], allow_all)
    assert caught.value.clashes == {"s__t": (("s", "t"), ("s", "t"))}


def test_a_blocked_tool_takes_no_name() -> None:
    members = [
        at.Member(Recording("a.b"), [define("x")]),
        at.Member(Recording("a_b"), [define("x")]),
    ]
    toolkit = at.assemble(members, lambda source, _: "block" if source == "a.b" else "allow")
    assert toolkit.source_tool("a_b__x") == ("a_b", "x")


async def test_blocked_tools_are_absent_and_cannot_be_called() -> None:
    source = Recording("tasks")
    definitions = [define("list", read_only=True), define("delete", read_only=False)]
    toolkit = at.assemble(
        [at.Member(source, definitions)],
        lambda _, d: "allow" if d.annotations.read_only else "block",
    )
    assert list(toolkit.tools) == ["tasks__list"]
    assert "tasks__delete" not in toolkit
    assert await toolkit.call("tasks__delete", {}) == {
        "isFailure": True,
        "code": "NotFoundError",
        "message": "There is no such tool.",
        "retryable": False,
    }
    with pytest.raises(KeyError):
        toolkit.source_tool("tasks__delete")
    assert source.calls == []


def test_approved_tools_are_marked_as_needing_approval() -> None:
    decisions: dict[str, at.Decision] = {"read": "allow", "write": "approve", "drop": "block"}
    toolkit = at.assemble(
        [at.Member(Recording("db"), [define(name) for name in decisions])],
        lambda _, d: decisions[d.name],
    )
    assert {name: tool.needs_approval for name, tool in toolkit.tools.items()} == {
        "db__read": False,
        "db__write": True,
    }
    assert toolkit.tools["db__write"].requires_approval({}) is True


def test_decide_is_asked_with_the_source_name_and_each_definition() -> None:
    asked: list[tuple[str, str]] = []

    def decide(source: str, definition: at.ToolDefinition) -> at.Decision:
        asked.append((source, definition.name))
        return "allow"

    at.assemble(
        [
            at.Member(Recording("one"), [define("a"), define("b")]),
            at.Member(Recording("two"), [define("a")]),
        ],
        decide,
    )
    assert asked == [("one", "a"), ("one", "b"), ("two", "a")]


def test_a_stored_policy_decides() -> None:
    stored = at.catalog.dump({"a": "allow", "b": "approve", "c": "block"})
    policy = at.catalog.load(dict[str, at.Decision], stored)
    toolkit = at.assemble(
        [at.Member(Recording("s"), [define("a"), define("b"), define("c")])],
        lambda _, d: policy[d.name],
    )
    assert {name: tool.needs_approval for name, tool in toolkit.tools.items()} == {
        "s__a": False,
        "s__b": True,
    }


def test_a_decision_that_is_none_of_the_three_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"decide gave 'yes' for s/a; it must give 'allow'"):
        at.assemble([at.Member(Recording("s"), [define("a")])], lambda _, __: "yes")  # type: ignore[arg-type, return-value]


def test_tools_are_listed_in_catalog_order() -> None:
    toolkit = at.assemble(
        [
            at.Member(Recording("b"), [define("z"), define("a")]),
            at.Member(Recording("a"), [define("m")]),
        ],
        allow_all,
    )
    assert list(toolkit.tools) == ["b__z", "b__a", "a__m"]


def test_building_contacts_no_source_and_compiles_no_validator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[str] = []

    def counting(schema: at.JsonObject, *, tool: str = "") -> object:
        compiled.append(tool)
        return validator_for(schema, tool=tool)

    monkeypatch.setattr("amends_toolkit.runtime._tools.validator_for", counting)
    definitions = [define(f"t{i}", CLOSED) for i in range(2_000)]
    toolkit = at.assemble([at.Member(Untouchable("s"), definitions)], allow_all)
    assert len(toolkit) == 2_000
    assert compiled == []


def test_an_assembled_tool_costs_the_collector_nothing() -> None:
    # The cyclic collector walks every object it tracks: assembly keeps per tool only its name
    # and an int (strings, ints and a dict of them are untracked), so however many tools, it
    # adds a constant few objects and never brings on a full collection. Entries are made when
    # a tool is first used.
    definitions = [define(f"t.{i}", CLOSED) for i in range(2_000)]
    member = at.Member(Untouchable("s"), definitions)
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        toolkit = at.assemble([member], lambda _, d: "approve" if d.name < "t.5" else "allow")
        kept = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert len(toolkit) == 2_000
    assert kept <= 10


async def test_a_tool_is_made_when_first_used_and_then_kept() -> None:
    source = Recording("s")
    toolkit = at.assemble(
        [
            at.Member(Recording("r"), [define("x")]),
            at.Member(source, [define("a", CLOSED), define("b")]),
        ],
        lambda _, d: "approve" if d.name == "b" else "allow",
    )
    assert toolkit.source_tool("s__b") == ("s", "b")
    made = toolkit.entry("s__a")
    assert await toolkit.call("s__a", {"id": 1}) == {
        "source": "s",
        "tool": "a",
        "input": {"id": 1},
    }
    assert toolkit.entry("s__a") is made
    assert made.route == ("s", "a")
    assert list(toolkit.tools) == ["r__x", "s__a", "s__b"]  # order kept where it was made
    assert [entry.name for entry in toolkit.entries()] == ["r__x", "s__a", "s__b"]
    assert toolkit.tools["s__b"].needs_approval is True
    assert toolkit.tools["s__a"] is made.tool
    assert source.calls == [("a", {"id": 1})]


def test_ascii_and_other_characters_are_cleaned_alike() -> None:
    # Names in ASCII are cleaned through a byte table, others through the pattern: one rule,
    # in tool_name and in assembly alike.
    expected = []
    for code in range(0x180):
        character = chr(code)
        kept = character.isascii() and (character.isalnum() or character in "_-")
        shown = character if kept else "_"
        assert tool_name("s", character) == f"s__{shown}"
        assert tool_name("s", f"é{character}") == f"s___{shown}"
        assert tool_name(f"{character}", "t") == f"{shown}__t"
        expected += [f"s__{code}{shown}", f"s__{code}_{shown}"]
    definitions = [define(f"{c}{m}{chr(c)}") for c in range(0x180) for m in ("", "é")]
    toolkit = at.assemble([at.Member(Recording("s"), definitions)], allow_all)
    assert list(toolkit.tools) == expected


def test_a_member_takes_any_sequence_of_definitions() -> None:
    member = at.Member(Recording("s"), (define(n) for n in "ab"))
    assert [d.name for d in member.definitions] == ["a", "b"]


async def test_calls_reach_the_actor_that_owns_the_tool_by_its_own_name() -> None:
    github, linear = Recording("github"), Recording("linear")
    async with Runtime() as runtime:
        github_ref = await runtime.spawn(github)
        linear_ref = await runtime.spawn(linear)
        toolkit = at.assemble(
            [
                at.Member(github_ref, [define("create.issue")]),
                at.Member(linear_ref, [define("create.issue"), define("close")]),
            ],
            allow_all,
        )
        answer = await toolkit.call("linear__create_issue", {"title": "x"})
        assert answer == {"source": "linear", "tool": "create.issue", "input": {"title": "x"}}
        await toolkit.call("github__create_issue", {"title": "y"})
    assert github.calls == [("create.issue", {"title": "y"})]
    assert linear.calls == [("create.issue", {"title": "x"})]
