"""Sessions over one presented toolkit share nothing a model or a person gave: one session's
approval never lets another's call run (nor its own next call), in every presentation, even
while the first person is still being asked; and one session's searches never change what
another's find.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

from .sources import ID, Recording, allow_all, define

pytestmark = pytest.mark.anyio


class Person:
    """Answers every question so; when ``gate`` is given, only once it is set, saying first
    that it was asked."""

    def __init__(self, answer: bool, gate: anyio.Event | None = None) -> None:
        self.answer = answer
        self.gate = gate
        self.asked: list[tuple[str, JsonObject]] = []
        self.waiting = anyio.Event()

    async def __call__(self, name: str, input: JsonObject) -> bool:
        self.asked.append((name, input))
        self.waiting.set()
        if self.gate is not None:
            await self.gate.wait()
        return self.answer


Call = Callable[[int], tuple[str, JsonObject]]
"""The call a presentation makes of ``db__write`` with ``{"id": n}``."""


def plain(toolkit: at.Toolkit) -> tuple[at.Toolkit, Call]:
    return toolkit, lambda n: ("db__write", {"id": n})


def search(toolkit: at.Toolkit) -> tuple[at.Toolkit, Call]:
    return at.tool_search(toolkit), lambda n: (
        "tool_call",
        {"name": "db__write", "input": {"id": n}},
    )


@pytest.fixture(params=["plain", "search", "code in process", "code in Monty"])
async def present(
    request: pytest.FixtureRequest,
) -> AsyncIterator[Callable[[at.Toolkit], tuple[at.Toolkit, Call]]]:
    if request.param == "plain":
        yield plain
        return
    if request.param == "search":
        yield search
        return
    async with contextlib.AsyncExitStack() as stack:
        runtime: at.CodeRuntime = at.InProcessRuntime()
        if request.param == "code in Monty":
            pytest.importorskip("pydantic_monty")
            runtime = await stack.enter_async_context(at.MontyRuntime(max_processes=1))

        def code(toolkit: at.Toolkit) -> tuple[at.Toolkit, Call]:
            presented = at.code_mode(toolkit, runtime, approval="ask")
            return presented, lambda n: (
                "execute",
                {"code": f'return await tools.db__write({{"id": {n}}})'},
            )

        yield code


def database() -> tuple[at.Toolkit, Recording]:
    source = Recording("db")
    toolkit = at.assemble(
        [at.Member(source, [define("read"), define("write", schema=ID)])],
        lambda _, d: "approve" if d.name == "write" else "allow",
    )
    return toolkit, source


async def test_one_session_s_approval_never_runs_another_s_call_nor_its_own_next(
    present: Callable[[at.Toolkit], tuple[at.Toolkit, Call]],
) -> None:
    toolkit, source = database()
    presented, call = present(toolkit)
    gate = anyio.Event()
    first, second = Person(True, gate), Person(False)
    answers: dict[str, JsonValue] = {}
    async with (
        at.Session(presented, approve=first) as one,
        at.Session(presented, approve=second) as other,
    ):

        async def approved_later() -> None:
            answers["one"] = await one.call(*call(1))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(approved_later)
            with anyio.fail_after(20):  # a call that did not ask its person never comes back
                await first.waiting.wait()
            # The first person is being asked, and will say yes: the other session's call is
            # asked of its own person, who says no.
            answers["other"] = await other.call(*call(2))
            gate.set()
        answers["again"] = await other.call(*call(3))
    assert source.calls == [("write", {"id": 1})]
    assert len(first.asked) == 1
    assert len(second.asked) == 2
    assert at.Failure.from_json(answers["one"]) is None, answers["one"]
    for refused in (answers["other"], answers["again"]):
        assert "ApprovalDenied" in str(refused)


async def test_one_session_s_searches_never_change_what_another_s_find() -> None:
    source = Recording("zoo")
    kinds = ["cat", "dog", "fish", "bird", "snake", "horse"]
    toolkit = at.assemble(
        [
            at.Member(
                source,
                [
                    define(f"feed_{kind}", f"Feed a {kind}, a pet of the store{'.' * i}")
                    for i, kind in enumerate(kinds)
                ],
            )
        ],
        allow_all,
    )
    queries = ["feed a pet", "pet store", "feed the dog", "store", ""]
    alone = at.tool_search(toolkit)
    expected = [await alone.call("tool_search", {"query": q, "limit": 2}) for q in queries]
    presented = at.tool_search(toolkit)
    async with (
        at.Session(presented, approve=Person(True)) as one,
        at.Session(presented, approve=Person(True)) as other,
    ):
        found = []
        for mine, theirs in zip(queries, reversed(queries), strict=True):
            await one.call("tool_search", {"query": theirs, "limit": 1})
            found.append(await other.call("tool_search", {"query": mine, "limit": 2}))
    assert found == expected
