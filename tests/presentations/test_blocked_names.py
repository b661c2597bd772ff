"""A tool the policy blocks is reached by no name a model may write for it, in every
presentation: the plain toolkit, tool search's ``tool_call``, and code mode's ``tools.<name>``
and ``tools["<name>"]`` (in process and in Monty). Each trick reads as a failure (or an error in
the code), and the source never sees a call.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

import amends_toolkit as at
from amends_toolkit.presentations import CodeTools, ToolError

from .sources import Recording, define

pytestmark = pytest.mark.anyio

BLOCKED = "tasks__delete_task"


def full_width(ascii: str) -> str:
    return "".join(chr(ord(letter) + 0xFEE0) for letter in ascii)


TRICKS = {
    "the name itself": BLOCKED,
    "the source's own name": "delete_task",
    "upper case": "TASKS__DELETE_TASK",
    "mixed case": "Tasks__Delete_Task",
    "a space before": f" {BLOCKED}",
    "a space after": f"{BLOCKED} ",
    "a newline after": f"{BLOCKED}\n",
    "a space inside": "tasks__ delete_task",
    "NUL after": f"{BLOCKED}\x00",
    "NUL inside": "tasks__delete\x00_task",
    "a zero-width space": "tasks__delete\u200b_task",
    "a zero-width joiner": "tasks__\u200ddelete_task",
    "a byte order mark before": f"\ufeff{BLOCKED}",
    "a soft hyphen": "tasks__dele\u00adte_task",
    "a Cyrillic e": "tasks__d\u0435lete_task",
    "a Cyrillic a": "t\u0430sks__delete_task",
    "full-width letters (NFKC makes them ASCII)": "_".join(
        map(full_width, ["tasks", "", "delete", "task"])
    ),
    "a combining accent": f"{BLOCKED}\u0301",
    "a dot for the separator": "tasks.delete_task",
    "a slash for the separator": "tasks/delete_task",
    "a glob of the source": "tasks__*",
    "a glob of the name": "tasks__delete_*",
    "a glob of everything": "*",
}


def blocked_toolkit() -> tuple[at.Toolkit, Recording]:
    source = Recording("tasks")
    toolkit = at.assemble(
        [at.Member(source, [define("list_tasks"), define("delete_task")])],
        lambda _, definition: "block" if definition.name == "delete_task" else "allow",
    )
    return toolkit, source


def test_the_blocked_tool_is_not_in_the_toolkit_and_the_table_holds_23_tricks() -> None:
    assert list(blocked_toolkit()[0].tools) == ["tasks__list_tasks"]
    assert len(TRICKS) == len(set(TRICKS.values())) == 23


@pytest.mark.parametrize("trick", TRICKS.values(), ids=TRICKS.keys())
async def test_no_name_reaches_a_blocked_tool_of_the_toolkit(trick: str) -> None:
    toolkit, source = blocked_toolkit()
    failure = at.Failure.from_json(await toolkit.call(trick, {}))
    assert failure is not None
    assert failure.code == "NotFoundError"
    assert "delete" not in failure.message
    assert source.calls == []


@pytest.mark.parametrize("trick", TRICKS.values(), ids=TRICKS.keys())
async def test_no_name_reaches_a_blocked_tool_through_tool_call_nor_shows_it_in_a_search(
    trick: str,
) -> None:
    toolkit, source = blocked_toolkit()
    presented = at.tool_search(toolkit)
    failure = at.Failure.from_json(await presented.call("tool_call", {"name": trick, "input": {}}))
    assert failure is not None
    assert failure.code == "NotFoundError"
    assert "delete" not in failure.message
    answer = await presented.call("tool_search", {"query": trick, "limit": 20})
    assert isinstance(answer, dict)
    assert "delete" not in json.dumps(answer["tools"])
    assert source.calls == []


def code(tricks: list[str]) -> str:
    """Code that calls each trick as ``tools["<trick>"]``, and as ``tools.<trick>`` when it is
    an identifier, then the tool that is allowed, and gives back what each call did."""
    lines = ["done = []"]
    calls = [f"tools[{trick!r}]" for trick in tricks]
    calls += [f"tools.{trick}" for trick in tricks if trick.isidentifier()]
    calls.append("tools.tasks__list_tasks")
    for call in calls:
        lines += [
            "try:",
            f"    await {call}({{}})",
            f"    done.append({call!r})",
            "except Exception as error:",
            "    done.append('refused')",
        ]
    lines.append("return done")
    return "\n".join(lines)


@pytest.fixture(params=["in process", "Monty"])
async def runtime(request: pytest.FixtureRequest) -> AsyncIterator[at.CodeRuntime]:
    if request.param == "in process":
        yield at.InProcessRuntime()
        return
    pytest.importorskip("pydantic_monty")
    async with at.MontyRuntime() as monty:
        yield monty


async def test_no_name_reaches_a_blocked_tool_from_code(runtime: at.CodeRuntime) -> None:
    toolkit, source = blocked_toolkit()
    tricks = list(TRICKS.values())
    presented = at.code_mode(toolkit, runtime)
    answer = await presented.call("execute", {"code": code(tricks)})
    assert isinstance(answer, dict), answer
    attributes = sum(trick.isidentifier() for trick in tricks)
    assert attributes == 8  # the name, its source's, two cases, two Cyrillic, full-width, accent
    assert answer["result"] == ["refused"] * (len(tricks) + attributes) + [
        "tools.tasks__list_tasks"
    ]
    assert source.calls == [("list_tasks", {})]


async def test_code_mode_s_host_refuses_a_blocked_name_the_code_s_tools_never_checked() -> None:
    # Code may call the host past its own ``tools`` (in process it can reach anything): the
    # host's side is what holds.
    toolkit, source = blocked_toolkit()
    tools = CodeTools(toolkit)
    for trick in TRICKS.values():
        with pytest.raises(ToolError) as caught:
            await tools.call(trick, {})
        assert caught.value.code == "NotFoundError"
    assert source.calls == []
