"""A hostile run of code mode: code that prints without end costs the host a bounded memory."""

from __future__ import annotations

import tracemalloc

import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

pytest.importorskip("pydantic_monty")

pytestmark = pytest.mark.anyio

LINES = 5_000
LINE = 4_000  # 20 MB printed in all


async def nothing(input: JsonObject) -> JsonValue:
    return None


TOOLKIT = Toolkit.from_entries(
    [
        ToolEntry(
            tool=Tool(name="nothing", description="", input_schema={"type": "object"}),
            handler=nothing,
        )
    ]
)
FLOOD = f"line = 'x' * {LINE}\nfor n in range({LINES}):\n    print(line)\nreturn n"


async def peak_of_a_flood(presented: at.Toolkit) -> tuple[JsonValue, int]:
    tracemalloc.start()
    try:
        answer = await presented.call("execute", {"code": FLOOD})
        return answer, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("in_monty", [True, False])
async def test_code_that_floods_its_output_keeps_a_bounded_part_and_says_what_it_dropped(
    in_monty: bool,
) -> None:
    kept = 10_000
    if in_monty:
        async with at.MontyRuntime(max_processes=1) as runtime:
            presented = at.code_mode(TOOLKIT, runtime, max_log_length=kept, timeout=120)
            answer, peak = await peak_of_a_flood(presented)
    else:
        presented = at.code_mode(TOOLKIT, at.InProcessRuntime(), max_log_length=kept)
        answer, peak = await peak_of_a_flood(presented)
    printed = LINES * (LINE + 1)
    # 20 MB printed (60 MB held when nothing was dropped); the host held a few lines at a time
    assert peak < 2_000_000, f"peak {peak} bytes"
    assert answer == {
        "result": LINES - 1,
        "logs": ["x" * LINE] * 2
        + ["x" * (kept - 2 * (LINE + 1))]
        + [
            f"[{printed - kept} more characters of output were dropped: a run keeps {kept};"
            " print less]"
        ],
    }
