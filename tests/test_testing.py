from __future__ import annotations

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit.testing import Gate, RecordingSource, allow_all, define, raising

pytestmark = pytest.mark.anyio


async def test_a_recording_source_answers_with_what_it_was_given_and_records_it() -> None:
    source = RecordingSource("db", {"fail": raising(at.NotFoundError(source="db"))})
    toolkit = at.assemble([at.Member(source, [define("read"), define("fail")])], allow_all)
    assert await toolkit.call("db__read", {"id": 1}) == {
        "source": "db",
        "tool": "read",
        "input": {"id": 1},
    }
    failure = at.Failure.from_json(await toolkit.call("db__fail", {}))
    assert failure is not None
    assert failure.code == "NotFoundError"
    assert source.calls == [("read", {"id": 1}), ("fail", {})]
    assert [d.name for d in await source.discover()] == ["fail"]
    assert source.discovers == 1


async def test_a_recording_source_runs_under_a_runtime_as_a_built_in_source_does_unless_told() -> (
    None
):
    tasks: list[int] = []

    async def where(input: at.JsonObject) -> at.JsonValue:
        tasks.append(anyio.get_current_task().id)
        return None

    declared = RecordingSource("a", {"where": where})
    undeclared = RecordingSource("b", {"where": where}, honours_cancellation=False)
    async with at.Runtime() as runtime:
        for source in (declared, undeclared):
            ref = await runtime.spawn(source)
            await anyio.wait_all_tasks_blocked()  # its actor running, with room
            await ref.call("where", {})
    # Inline, in the caller's own task; without the declaration, in its actor's task.
    me = anyio.get_current_task().id
    assert tasks[0] == me
    assert tasks[1] != me


@pytest.mark.virtual_clock
async def test_a_gate_holds_a_call_until_released_and_counts_a_cancelled_one() -> None:
    gate = Gate("opened")
    source = RecordingSource("s", {"wait": gate})
    with anyio.move_on_after(60):
        await source.call("wait", {})
    assert (gate.cancelled, gate.started.is_set()) == (1, True)
    assert anyio.current_time() == pytest.approx(60)  # a minute, on the virtual clock
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(source.call, "wait", {})
        await anyio.wait_all_tasks_blocked()
        assert gate.running == 1
        gate.release.set()
    assert gate.running == 0
