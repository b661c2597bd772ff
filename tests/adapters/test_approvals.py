"""Out-of-band approvals in the library: stored, listed, decided once, bounded, timed out."""

from __future__ import annotations

import functools
import hashlib
import json
import time
import unicodedata
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit._peer import MAX_SHOWN
from amends_toolkit.adapters import (
    AlreadyDecided,
    Approvals,
    MemoryApprovalStore,
    PendingApproval,
    SQLiteApprovalStore,
    UnknownApproval,
)
from runtime.toolkit_sources import Recording, define

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from amends_toolkit import JsonObject

pytestmark = pytest.mark.anyio


def kit(source: Recording) -> at.Toolkit:
    return at.assemble([at.Member(source, [define("write")])], lambda _, d: "approve")


@pytest.fixture(params=["memory", "sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[at.adapters.ApprovalStore]:
    if request.param == "memory":
        yield MemoryApprovalStore()
        return
    sqlite = SQLiteApprovalStore(tmp_path / "approvals.db")
    yield sqlite
    sqlite.close()


class Watched(Approvals):
    """Approvals whose every announcement is kept, so a test waits for a call to ask."""

    def __init__(self, **options: Any) -> None:
        self.seen: list[PendingApproval] = []
        self.taken = 0
        self.more = anyio.Event()
        super().__init__(announce=self.note, **options)

    async def note(self, pending: PendingApproval) -> None:
        self.seen.append(pending)
        self.more.set()
        self.more = anyio.Event()


async def pending_one(approvals: Watched) -> PendingApproval:
    """The next approval announced (and so stored), once a call has asked."""
    while approvals.taken >= len(approvals.seen):
        await approvals.more.wait()
    approvals.taken += 1
    return approvals.seen[approvals.taken - 1]


async def test_a_call_waits_until_an_approver_approves_then_runs_once(
    store: at.adapters.ApprovalStore,
) -> None:
    source = Recording("db")
    approvals = Watched(store=store)
    answers: list[at.JsonValue] = []
    async with (
        at.Session(kit(source), approve=approvals.approve) as session,
        anyio.create_task_group() as tasks,
    ):

        async def call() -> None:
            answers.append(await session.call("db__write", {"id": 1}))

        tasks.start_soon(call)
        pending = await pending_one(approvals)
        assert source.calls == []
        assert pending.tool == "db__write"
        assert pending.input_shown == '{"id": 1}'
        assert pending.input_digest == hashlib.sha256(b'{"id":1}').hexdigest()
        assert pending.deadline - pending.created == approvals.approval_timeout
        decided = await approvals.decide(pending.id, approve=True, by="alice")
        assert (decided.approved, decided.decided_by) == (True, "alice")
    assert source.calls == [("write", {"id": 1})]
    assert await approvals.pending() == []


async def test_a_denied_call_does_not_run_and_reads_approval_denied(
    store: at.adapters.ApprovalStore,
) -> None:
    source = Recording("db")
    approvals = Watched(store=store)
    results: list[at.ToolResult] = []
    async with (
        at.Session(kit(source), approve=approvals.approve) as session,
        anyio.create_task_group() as tasks,
    ):

        async def call() -> None:
            results.append(await session.invoke("db__write", {"id": 1}))

        tasks.start_soon(call)
        pending = await pending_one(approvals)
        await approvals.decide(pending.id, approve=False, by="alice")
    assert isinstance(results[0].value, dict)
    assert results[0].value["code"] == "ApprovalDenied"
    assert source.calls == []


async def test_a_forged_id_decides_nothing(store: at.adapters.ApprovalStore) -> None:
    approvals = Watched(store=store)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(approvals.request, "t", {})
        pending = await pending_one(approvals)
        for forged in ("", "x", pending.id[:-1], pending.id + "x", "' OR 1=1 --", "%"):
            with pytest.raises(UnknownApproval):
                await approvals.decide(forged, approve=True, by="mallory")
        assert await approvals.pending() == [pending]
        tasks.cancel_scope.cancel()


async def test_an_approval_is_decided_once(store: at.adapters.ApprovalStore) -> None:
    approvals = Watched(store=store)
    decided: list[PendingApproval] = []
    async with anyio.create_task_group() as tasks:

        async def call() -> None:
            decided.append(await approvals.request("t", {}, caller="key:agent"))

        tasks.start_soon(call)
        pending = await pending_one(approvals)
        await approvals.decide(pending.id, approve=False, by="bob")
        with pytest.raises((AlreadyDecided, UnknownApproval)):
            await approvals.decide(pending.id, approve=True, by="mallory")
    assert [(d.approved, d.decided_by) for d in decided] == [(False, "bob")]
    with pytest.raises(UnknownApproval):
        await approvals.decide(pending.id, approve=True, by="mallory")


async def test_the_store_decides_once_when_two_decide_at_once(
    store: at.adapters.ApprovalStore,
) -> None:
    approval = PendingApproval(
        id="a", tool="t", source=None, input_digest="d", input_shown="{}", caller=None,
        profile=None, created=0.0, deadline=1e12,
    )  # fmt: skip
    assert await store.add(approval, max_pending=5, max_per_caller=5)
    outcomes: list[str] = []

    async def decide(approve: bool) -> None:
        try:
            await store.decide("a", approved=approve, by=str(approve))
            outcomes.append("decided")
        except AlreadyDecided:
            outcomes.append("refused")

    async with anyio.create_task_group() as tasks:
        for approve in (True, False, True, False):
            tasks.start_soon(decide, approve)
    assert sorted(outcomes) == ["decided", "refused", "refused", "refused"]


async def test_a_flood_from_one_caller_is_bounded_and_other_callers_are_still_asked(
    store: at.adapters.ApprovalStore,
) -> None:
    approvals = Watched(store=store, max_pending=5, max_pending_per_caller=3)
    sent, refused = anyio.create_memory_object_stream[tuple[str, str]](1_000)

    async def call(caller: str, n: int) -> None:
        try:
            await approvals.request("t", {"n": n}, caller=caller)
        except at.ApprovalRequired as error:
            await sent.send((caller, error.message))

    with anyio.fail_after(10):  # a bound that does not hold leaves the test waiting
        async with sent, refused, anyio.create_task_group() as tasks:
            for n in range(50):
                tasks.start_soon(call, "key:flood", n)
            flood = [await refused.receive() for _ in range(47)]
            tasks.start_soon(call, "key:other", 0)
            tasks.start_soon(call, "key:third", 0)
            announced = [await pending_one(approvals) for _ in range(5)]
            tasks.start_soon(call, "key:fourth", 0)  # past max_pending
            fourth = await refused.receive()
            pending = await approvals.pending()
            tasks.cancel_scope.cancel()
    assert {caller for caller, _ in flood} == {"key:flood"}
    assert fourth[0] == "key:fourth"
    assert {message for _, message in [*flood, fourth]} == {
        "too many approvals are pending (max_pending, max_pending_per_caller)"
    }
    assert sorted(p.caller or "" for p in pending) == sorted(p.caller or "" for p in announced)
    assert sorted(p.caller or "" for p in pending) == [
        "key:flood", "key:flood", "key:flood", "key:other", "key:third",
    ]  # fmt: skip


async def test_a_huge_hostile_input_is_kept_cut_and_plain_never_whole(
    store: at.adapters.ApprovalStore,
) -> None:
    approvals = Watched(store=store)
    tricks = "\x1b[2J\u009b31m\u202e\u2066\u200b\r\n\x7f\U000e0041"
    huge: JsonObject = {"note" + tricks: tricks * 200_000, "id": 1}
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(
            functools.partial(approvals.request, "t\u202e" * 1_000, huge, caller="c" * 10_000)
        )
        pending = await pending_one(approvals)
        tasks.cancel_scope.cancel()
    # At most MAX_SHOWN characters of JSON, each written as an escape of up to ten.
    assert len(pending.input_shown) < 11 * MAX_SHOWN
    assert pending.input_shown.endswith(" more characters not shown)")
    assert "\\u202e" in pending.input_shown
    assert pending.tool.startswith("t\\u202et\\u202e")
    assert len(pending.tool) < 11 * 200
    assert pending.caller is not None
    assert len(pending.caller) < 300  # plain characters: no escapes
    listed = json.dumps(pending.to_json(), ensure_ascii=False)
    assert len(listed) < 12 * MAX_SHOWN
    assert not [c for c in pending.input_shown if unicodedata.category(c)[0] in "CZ" and c != " "]
    assert (
        pending.input_digest
        == hashlib.sha256(
            json.dumps(huge, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
    )


@pytest.mark.virtual_clock
async def test_nobody_deciding_in_time_is_approval_timed_out_and_the_tool_does_not_run() -> None:
    source = Recording("db")
    approvals = Approvals(approval_timeout=60.0)
    async with at.Session(kit(source), approve=approvals.approve) as session:
        with anyio.fail_after(61):
            result = await session.invoke("db__write", {"id": 1})
    assert isinstance(result.value, dict)
    assert result.value["code"] == "ApprovalTimedOut"
    assert result.value["message"] == at.ApprovalTimedOut.default_message
    assert source.calls == []
    assert await approvals.pending() == []


async def test_a_cancelled_call_keeps_its_approval_which_decides_its_next_same_call_once(
    store: at.adapters.ApprovalStore,
) -> None:
    approvals = Watched(store=store)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(functools.partial(approvals.request, "t", {"n": 1}, caller="key:a"))
        pending = await pending_one(approvals)
        tasks.cancel_scope.cancel()
    assert await approvals.pending() == [pending]
    await approvals.decide(pending.id, approve=False, by="alice")
    again = await approvals.request("t", {"n": 1}, caller="key:a")
    assert (again.id, again.approved, again.decided_by) == (pending.id, False, "alice")
    assert await approvals.pending() == []
    with pytest.raises(UnknownApproval):
        await approvals.decide(pending.id, approve=True, by="alice")


async def test_an_announcement_that_fails_does_not_stop_the_call() -> None:
    sent, announced = anyio.create_memory_object_stream[PendingApproval](1)

    async def announce(pending: PendingApproval) -> None:
        await sent.send(pending)
        raise OSError("the webhook is down")

    approvals = Approvals(announce=announce)
    decided: list[PendingApproval] = []
    async with sent, announced, anyio.create_task_group() as tasks:

        async def call() -> None:
            decided.append(await approvals.request("t", {}))

        tasks.start_soon(call)
        pending = await announced.receive()
        await anyio.wait_all_tasks_blocked()  # the announcement has failed; the call waits
        assert await approvals.pending() == [pending]
        await approvals.decide(pending.id, approve=True, by="alice")
    assert decided[0].approved is True


async def test_a_pending_approval_of_a_call_gone_in_a_restart_decides_its_next_same_call_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "approvals.db"
    # What a gateway stopped while a call waited leaves in the file: its row, and no call.
    before = SQLiteApprovalStore(path)
    digest = hashlib.sha256(b'{"id":1}').hexdigest()
    asked = PendingApproval(
        id="before", tool="db__write", source="db", input_digest=digest, input_shown='{"id": 1}',
        caller="key:agent", profile="eng", created=time.time(), deadline=time.time() + 600,
    )  # fmt: skip
    assert await before.add(asked, max_pending=5, max_per_caller=5)
    before.close()

    store = SQLiteApprovalStore(path)
    approvals = Watched(store=store)
    assert await approvals.pending() == [asked]
    await approvals.decide(asked.id, approve=True, by="alice")
    assert await approvals.pending() == []
    source = Recording("db")

    async def as_agent(name: str, input: JsonObject) -> bool:
        return (await approvals.request(name, input, caller="key:agent")).approved is True

    async with (
        at.Session(kit(source), approve=as_agent) as session,
        anyio.create_task_group() as tasks,
    ):
        await session.call("db__write", {"id": 1})
        assert source.calls == [("write", {"id": 1})]
        # Used once: the same call again is asked anew.
        tasks.start_soon(session.call, "db__write", {"id": 1})
        with anyio.fail_after(10):
            again = await pending_one(approvals)
        assert again.id != asked.id
        tasks.cancel_scope.cancel()
    assert source.calls == [("write", {"id": 1})]
    store.close()


async def test_the_same_call_after_a_restart_waits_on_the_approval_of_before(
    tmp_path: Path,
) -> None:
    store = SQLiteApprovalStore(tmp_path / "approvals.db")
    digest = hashlib.sha256(b'{"id":1}').hexdigest()
    asked = PendingApproval(
        id="before", tool="t", source=None, input_digest=digest, input_shown='{"id": 1}',
        caller="key:agent", profile=None, created=time.time(), deadline=time.time() + 600,
    )  # fmt: skip
    assert await store.add(asked, max_pending=5, max_per_caller=5)
    approvals = Watched(store=store)
    decided: list[PendingApproval] = []
    async with anyio.create_task_group() as tasks:

        async def call() -> None:
            decided.append(await approvals.request("t", {"id": 1}, caller="key:agent"))

        tasks.start_soon(call)
        assert (await pending_one(approvals)).id == "before"
        assert [p.id for p in await approvals.pending()] == ["before"]
        await approvals.decide("before", approve=True, by="alice")
    assert [(d.id, d.approved) for d in decided] == [("before", True)]
    assert await approvals.pending() == []
    store.close()


async def test_a_decision_another_process_stores_reaches_the_waiting_call(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    here, there = SQLiteApprovalStore(path), SQLiteApprovalStore(path)
    waiting = Watched(store=here, poll_interval=0.01)
    elsewhere = Approvals(store=there)
    decided: list[PendingApproval] = []
    async with anyio.create_task_group() as tasks:

        async def call() -> None:
            decided.append(await waiting.request("t", {}))

        tasks.start_soon(call)
        pending = await pending_one(waiting)
        assert await elsewhere.pending() == [pending]
        await elsewhere.decide(pending.id, approve=True, by="approver key:ops")
    assert [(d.approved, d.decided_by) for d in decided] == [(True, "approver key:ops")]
    here.close()
    there.close()


async def test_an_approval_past_its_deadline_cannot_be_decided() -> None:
    now = [1_000.0]
    approvals = Watched(approval_timeout=60.0, clock=lambda: now[0])
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(approvals.request, "t", {})
        pending = await pending_one(approvals)
        now[0] += 60.0
        with pytest.raises(UnknownApproval):
            await approvals.decide(pending.id, approve=True, by="alice")
        tasks.cancel_scope.cancel()


def test_bad_options_are_refused_naming_the_option() -> None:
    with pytest.raises(ValueError, match="approval_timeout"):
        Approvals(approval_timeout=0)
    with pytest.raises(ValueError, match="max_pending_per_caller"):
        Approvals(max_pending_per_caller=0)
    with pytest.raises(ValueError, match="max_pending must"):
        Approvals(max_pending=True)
