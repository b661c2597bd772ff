from __future__ import annotations

import asyncio

import anyio
import pytest

from amends_toolkit.runtime._messages import Call, Request, waiters


def test_a_call_is_made_as_every_request_is() -> None:
    # Every field a Request has, a Call has too, with the same values.
    call = Call("t", {}, 5.0)
    request = Request(5.0)
    for kind in Request.__mro__:
        for field in getattr(kind, "__slots__", ()):
            if field != "__weakref__":
                assert getattr(call, field) == getattr(request, field), field
    assert (call.tool, call.input, call.progress) == ("t", {}, None)


# Futures as waiters: a conscious departure from anyio's Event (cheaper to make and to wake),
# kept only because a waiter behaves as an asyncio future on both backends, as the mailbox needs.


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_on_asyncio_a_waiter_is_the_loop_s_own_future(anyio_backend: str) -> None:
    assert isinstance(waiters()(), asyncio.Future)


@pytest.mark.anyio
@pytest.mark.both_backends
async def test_a_waiter_is_done_once_set_and_wakes_its_task(anyio_backend: str) -> None:
    waiter = waiters()()
    woke: list[bool] = []

    async def wait() -> None:
        await waiter
        woke.append(True)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait)
        await anyio.wait_all_tasks_blocked()
        assert not waiter.done()
        waiter.set_result(None)
        assert waiter.done()
        assert not waiter.cancelled()
    assert woke == [True]


@pytest.mark.anyio
@pytest.mark.both_backends
async def test_a_waiter_is_cancelled_as_soon_as_its_task_s_scope_is(anyio_backend: str) -> None:
    # The mailbox skips a caller that left by asking its waiter, before that task runs again.
    waiter = waiters()()
    async with anyio.create_task_group() as tasks:

        async def wait(scope: anyio.CancelScope) -> None:
            with scope:
                await waiter

        scope = anyio.CancelScope()
        tasks.start_soon(wait, scope)
        await anyio.wait_all_tasks_blocked()
        assert not waiter.cancelled()
        scope.cancel()
        assert waiter.cancelled()
        assert waiter.done()
