"""The mailbox's backpressure: callers waiting for room are served in turn, as many at once as
there is room for."""

from __future__ import annotations

import asyncio
from collections.abc import Generator

import anyio
import pytest

from amends_toolkit.runtime._mailbox import Mailbox, Shares
from amends_toolkit.runtime._messages import Call, waiters

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_room_for_two_lets_two_waiting_callers_put_in_the_same_turn(
    anyio_backend: str,
) -> None:
    # asyncio runs woken tasks in the order they were woken, before a task that yields after.
    make = waiters()
    mailbox = Mailbox(2, make)
    for _ in range(2):
        await mailbox.put(Call(tool="t", input={}))
    sent: list[int] = []

    async def caller(number: int) -> None:
        await mailbox.put(Call(tool="t", input={}))
        sent.append(number)

    async with anyio.create_task_group() as group:
        for number in range(3):
            group.start_soon(caller, number)
        await anyio.wait_all_tasks_blocked()
        assert len(mailbox) == 2
        assert sent == []
        await mailbox.get()
        await mailbox.get()
        await anyio.lowlevel.checkpoint()
        # both places were taken in one turn of the loop, in the callers' order, not one a turn
        assert sent == [0, 1]
        assert len(mailbox) == 2
        await mailbox.get()
        await anyio.lowlevel.checkpoint()
        assert sent == [0, 1, 2]


class Counted:
    """A waiter over an asyncio future that counts how often the mailbox looks at it."""

    looks = 0

    def __init__(self) -> None:
        self._future = asyncio.get_running_loop().create_future()

    def done(self) -> bool:
        Counted.looks += 1
        return self._future.done()

    def cancelled(self) -> bool:
        Counted.looks += 1
        return self._future.cancelled()

    def set_result(self, result: None, /) -> None:
        self._future.set_result(result)

    def __await__(self) -> Generator[object, None, object]:
        return self._future.__await__()


async def looks_to_serve(callers: int) -> int:
    """How often a full mailbox looks at waiters while ``callers`` waiting callers put, room
    for all of them opening at once (as many workers taking requests in one turn)."""
    Counted.looks = 0
    mailbox = Mailbox(callers, Counted)
    for _ in range(callers):
        await mailbox.put(Call(tool="t", input={}))
    async with anyio.create_task_group() as group:
        for _ in range(callers):
            group.start_soon(mailbox.put, Call(tool="t", input={}))
        await anyio.wait_all_tasks_blocked()
        for _ in range(callers):
            await mailbox.get()
    assert len(mailbox) == callers
    return Counted.looks


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_waking_callers_waiting_to_put_is_linear_in_their_number(
    anyio_backend: str,
) -> None:
    # Each place that opens wakes the next caller in line without walking past the callers
    # woken already and not yet run (walking past them made 512 callers cost twice 64's).
    few, many = await looks_to_serve(100), await looks_to_serve(400)
    assert many <= 5 * few


@pytest.mark.both_backends
async def test_a_share_handed_to_a_call_cancelled_before_it_ran_is_given_back_and_forgotten() -> (
    None
):
    shares = Shares(1, waiters())
    assert shares.take_now("a")
    assert not shares.take_now("a")
    taken: list[str] = []

    async def take(scope: anyio.CancelScope) -> None:
        with scope:
            await shares.take("a")
            taken.append("a")

    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()
        group.start_soon(take, scope)
        await anyio.wait_all_tasks_blocked()
        # In one step: the place is handed to the waiting call, whose caller then leaves.
        shares.give_back("a")
        scope.cancel()
    assert taken == []
    assert len(shares) == 0
    assert shares.take_now("a")  # the place came back
