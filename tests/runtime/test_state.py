from __future__ import annotations

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, StateLoop

pytestmark = pytest.mark.anyio


class Counter:
    """State changed only by messages: ``begin`` makes a session once, ``boom`` raises."""

    def __init__(self) -> None:
        self.session: int | None = None
        self.begun = 0
        self.gate = anyio.Event()
        self.handling = 0
        self.most_at_once = 0

    async def handle(self, message: str) -> object:
        self.handling += 1
        self.most_at_once = max(self.most_at_once, self.handling)
        try:
            if message == "boom":
                raise at.UnavailableError(source="s", message="the server is down")
            if self.session is None:
                await self.gate.wait()
                self.begun += 1
                self.session = self.begun
            return self.session
        finally:
            self.handling -= 1


async def test_many_askers_for_one_change_make_it_once_one_message_at_a_time() -> None:
    state = Counter()
    loop = StateLoop(state.handle, name="s")
    answers: list[object] = []

    async def ask() -> None:
        answers.append(await loop.ask("begin"))

    async with anyio.create_task_group() as tasks:
        await tasks.start(loop.run)
        async with anyio.create_task_group() as askers:
            for _ in range(50):
                askers.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            state.gate.set()
        tasks.cancel_scope.cancel()
    assert answers == [1] * 50
    assert state.begun == 1
    assert state.most_at_once == 1


async def test_what_handling_raises_reaches_the_asker_and_the_loop_goes_on() -> None:
    state = Counter()
    state.gate.set()
    loop = StateLoop(state.handle, name="s")
    async with anyio.create_task_group() as tasks:
        await tasks.start(loop.run)
        with pytest.raises(at.UnavailableError, match="down"):
            await loop.ask("boom")
        assert await loop.ask("begin") == 1
        tasks.cancel_scope.cancel()


async def test_a_stopped_loop_answers_unavailable_to_waiting_and_later_askers() -> None:
    state = Counter()
    loop = StateLoop(state.handle, name="s")
    outcomes: list[str] = []

    async def ask() -> None:
        with pytest.raises(at.UnavailableError, match="stopped"):
            await loop.ask("begin")
        outcomes.append("unavailable")

    async with anyio.create_task_group() as askers, anyio.create_task_group() as tasks:
        await tasks.start(loop.run)
        for _ in range(3):
            askers.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        tasks.cancel_scope.cancel()
    assert outcomes == ["unavailable"] * 3
    with pytest.raises(at.UnavailableError):
        await loop.ask("begin")


def test_the_handle_a_host_holds_exposes_nothing_of_the_loop() -> None:
    public = {name for name in dir(ActorRef) if not name.startswith("_")}
    assert public == {"name", "discover", "call", "statistics"}
