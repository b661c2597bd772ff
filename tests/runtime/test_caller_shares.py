"""Each caller's share of an actor (``max_per_caller``, callers named by ``at.calling_as``): a
caller past its share waits in a line of its own, so another caller's call runs at once."""

from __future__ import annotations

import logging

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.runtime import ActorRef, Runtime

from .sources import Honouring
from .test_actor import Gated, running, told

pytestmark = pytest.mark.anyio


async def as_caller(
    caller: str | None, outcomes: dict[str, str], ref: ActorRef, tool: str, text: str
) -> None:
    with at.calling_as(caller):
        await told(outcomes, ref, tool, text)


def callers_kept(ref: ActorRef) -> int:
    """How many callers the ref keeps a share for (private: what a share costs must end)."""
    shares = ref._shares
    assert shares is not None
    return len(shares)


@pytest.mark.both_backends
@pytest.mark.parametrize("inline", [True, False])
async def test_a_caller_holding_its_whole_share_does_not_delay_another_callers_call(
    inline: bool,
) -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}
    async with Runtime() as runtime:
        # The defaults of the gateway: 64 slots, half of them one caller's share.
        ref = await running(runtime, source, inline=inline, max_per_caller=32)
        async with anyio.create_task_group() as tasks:
            for index in range(64 + 8):
                tasks.start_soon(as_caller, "a", outcomes, ref, "wait", f"a{index}")
            await anyio.wait_all_tasks_blocked()
            assert source.started == 32
            assert ref.statistics().in_flight == 32
            assert ref.statistics().queued == 0  # a's other calls wait outside the mailbox
            tasks.start_soon(as_caller, "b", outcomes, ref, "echo", "b")
            await anyio.wait_all_tasks_blocked()
            assert outcomes == {"b": "{'text': 'b'}"}
            assert source.started == 32
            source.release.set()
        assert len(outcomes) == 64 + 8 + 1
        assert {outcomes[f"a{index}"] for index in range(64 + 8)} == {"released"}
        assert source.started == 64 + 8
        assert callers_kept(ref) == 0


@pytest.mark.both_backends
async def test_a_callers_calls_run_in_the_order_they_came_as_its_share_frees() -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=8, max_per_caller=1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(as_caller, "a", outcomes, ref, "wait", "first")
            await anyio.wait_all_tasks_blocked()
            for text in ("second", "third"):
                tasks.start_soon(as_caller, "a", outcomes, ref, "echo", text)
                await anyio.wait_all_tasks_blocked()
            assert source.texts == ["first"]
            source.release.set()
        assert source.texts == ["first", "second", "third"]
        assert callers_kept(ref) == 0


@pytest.mark.both_backends
async def test_a_slot_freed_while_callers_at_their_share_fill_the_source_goes_to_another_caller() -> (
    None
):
    # A share bounds each caller, not their number: two at theirs fill the source. A third
    # caller's call then waits in the mailbox, and the first slot freed is its, not the next
    # call of the caller whose call ended.
    source = Gated()
    outcomes: dict[str, str] = {}
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=4, max_per_caller=2)
        async with anyio.create_task_group() as tasks:
            for caller in ("a", "c"):
                for index in (1, 2, 3):
                    tasks.start_soon(as_caller, caller, outcomes, ref, "gate", f"{caller}{index}")
                    await anyio.wait_all_tasks_blocked()
            tasks.start_soon(as_caller, "b", outcomes, ref, "gate", "b")
            await anyio.wait_all_tasks_blocked()
            assert source.texts == ["a1", "a2", "c1", "c2"]
            assert ref.statistics().queued == 1
            source.open("a1")
            await anyio.wait_all_tasks_blocked()
            assert source.texts == ["a1", "a2", "c1", "c2", "b"]
            for text in ("a2", "c1", "c2", "b", "a3", "c3"):
                source.open(text)
        assert sorted(outcomes) == ["a1", "a2", "a3", "b", "c1", "c2", "c3"]
        assert callers_kept(ref) == 0


@pytest.mark.both_backends
async def test_calls_of_no_named_caller_have_no_share() -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=4, max_per_caller=2)
        async with anyio.create_task_group() as tasks:
            for index in range(5):
                tasks.start_soon(as_caller, None, outcomes, ref, "wait", f"{index}")
            await anyio.wait_all_tasks_blocked()
            # As without a share: max_concurrency run, the next waits in the mailbox.
            assert source.started == 4
            assert ref.statistics().queued == 1
            source.release.set()
        assert callers_kept(ref) == 0


@pytest.mark.both_backends
async def test_a_named_caller_has_no_share_in_an_actor_spawned_without_one() -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_concurrency=4)
        async with anyio.create_task_group() as tasks:
            for index in range(5):
                tasks.start_soon(as_caller, "a", outcomes, ref, "wait", f"{index}")
            await anyio.wait_all_tasks_blocked()
            assert source.started == 4
            assert ref.statistics().queued == 1
            source.release.set()


@pytest.mark.virtual_clock
async def test_a_call_waiting_for_its_callers_share_ends_at_its_deadline_and_never_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="amends_toolkit")
    source = Honouring()
    outcomes: dict[str, str] = {}
    # The call that holds the share ignores cancellation through the mailbox: it holds it past
    # the deadline of the call behind it, for the grace.
    async with Runtime(grace=60.0) as runtime:
        ref = await running(runtime, source, inline=False, max_per_caller=1, call_timeout=10.0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(as_caller, "a", outcomes, ref, "stubborn", "holding")
            await anyio.sleep(1.0)
            tasks.start_soon(as_caller, "a", outcomes, ref, "echo", "waiting")
            await anyio.wait_all_tasks_blocked()
            try:
                with anyio.fail_after(30.0):
                    while "waiting" not in outcomes:  # noqa: ASYNC110 - on the virtual clock
                        await anyio.sleep(0.5)
                assert anyio.current_time() == pytest.approx(11.0, abs=0.5)
                assert outcomes["waiting"] == (
                    "scripted: echo: no answer within the call_timeout of 10 seconds"
                )
            finally:
                source.release.set()  # a stubborn call never set free would hold the test
        assert outcomes["holding"] == "late"
        assert source.texts == ["holding"]
        assert callers_kept(ref) == 0
    assert [r.getMessage() for r in caplog.records].count("call.timed_out") == 1


@pytest.mark.both_backends
async def test_a_call_cancelled_while_it_waits_for_its_share_leaves_the_line() -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_per_caller=1)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(as_caller, "a", outcomes, ref, "wait", "holding")
            await anyio.wait_all_tasks_blocked()
            waiting = anyio.CancelScope()

            async def cancellable() -> None:
                with waiting:
                    await as_caller("a", outcomes, ref, "echo", "cancelled")

            tasks.start_soon(cancellable)
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(as_caller, "a", outcomes, ref, "echo", "next")
            await anyio.wait_all_tasks_blocked()
            waiting.cancel()
            await anyio.wait_all_tasks_blocked()
            source.release.set()
        assert outcomes == {"holding": "released", "next": "{'text': 'next'}"}
        assert source.texts == ["holding", "next"]
        assert callers_kept(ref) == 0


@pytest.mark.both_backends
async def test_a_stop_answers_the_calls_waiting_for_their_share() -> None:
    source = Honouring()
    outcomes: dict[str, str] = {}
    async with Runtime() as runtime:
        ref = await running(runtime, source, max_per_caller=1)
        async with anyio.create_task_group() as tasks:
            for text in ("holding", "waiting"):
                tasks.start_soon(as_caller, "a", outcomes, ref, "wait", text)
                await anyio.wait_all_tasks_blocked()
            await runtime.stop(ref)
        assert outcomes == {
            "holding": "scripted: the source stopped while the call ran",
            "waiting": "scripted: the source is stopped",
        }
        assert source.started == 1
        assert callers_kept(ref) == 0


async def test_spawn_refuses_a_share_that_is_no_count_of_calls() -> None:
    async with Runtime() as runtime:
        with pytest.raises(ValueError, match="max_per_caller >= 1"):
            await runtime.spawn(Honouring(), max_per_caller=0)
        with pytest.raises(TypeError, match="max_per_caller must be an int"):
            await runtime.spawn(Honouring(), max_per_caller=True)
