"""The mailbox's backpressure: callers waiting for room are served in turn, as many at once as
there is room for."""

from __future__ import annotations

import anyio
import pytest

from amends_toolkit.runtime._mailbox import Mailbox
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
