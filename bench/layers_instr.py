"""Instructions a call costs in the layers above a source, at many callers: one run of
``calls`` calls, ``concurrency`` callers at a time, through an in-process source that waits one
turn of the event loop (so that the calls are in flight at once, as a network call's are).

Run it under valgrind, counting only the measured calls (see ``bench/NOTES.md``, "the layers at
many callers"): build a library that switches callgrind's counting on and off,

    cat > cg.c <<'C'
    #include <valgrind/callgrind.h>
    void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
    void cg_stop(void) { CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
    C
    gcc -O2 -shared -fPIC -o libcg.so cg.c

then ``valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=cg.out python -m
bench.layers_instr --subject session-actor --concurrency 512 --calls 4096 --toggle ./libcg.so``
and divide the ``totals:`` of ``cg.out.1`` by the calls. Without valgrind, difference the totals
of two runs with two call counts instead.

Subjects: ``source`` (``source.call``), ``session`` (``Session -> Toolkit -> source``),
``actor`` (``toolkit.call`` over the source's actor) and ``session-actor`` (``Session ->
Toolkit -> actor -> source``, spawned with the runtime's defaults: 64 calls at once, inline).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import gc
from collections.abc import Awaitable, Callable, Sequence

import anyio

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from bench.bench_toolkit import INPUT, SCHEMA
from bench.client_cpu import turn


class Echo:
    """An in-process source that answers its input after one turn of the event loop."""

    name = "bench"
    honours_cancellation = True

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return [at.ToolDefinition(name="echo", description="Echo.", input_schema=SCHEMA)]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        await anyio.lowlevel.checkpoint()
        return input


async def run(
    subject: str, calls: int, concurrency: int, toggles: tuple[Callable[[], object], ...]
) -> None:
    source = Echo()
    async with at.Runtime() as runtime:
        target: at.ToolSource = source
        if subject in ("actor", "session-actor"):
            target = await runtime.spawn(source)
        toolkit = at.assemble([at.Member(target, await target.discover())], lambda _, __: "allow")
        async with at.Session(toolkit, approve=lambda _, __: True) as session:
            call: Callable[[], Awaitable[object]] = {
                "source": functools.partial(source.call, "echo", INPUT),
                "actor": functools.partial(toolkit.call, "bench__echo", INPUT),
                "session": functools.partial(session.call, "bench__echo", INPUT),
                "session-actor": functools.partial(session.call, "bench__echo", INPUT),
            }[subject]
            await turn(call, 2, concurrency)  # warm up: the validator, the pool of workers
            gc.collect()
            start, stop = toggles
            start()
            await turn(call, calls // concurrency, concurrency)
            stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.layers_instr")
    parser.add_argument(
        "--subject", choices=("source", "session", "actor", "session-actor"), required=True
    )
    parser.add_argument("--calls", type=int, default=1024)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument(
        "--toggle",
        help="a shared library whose cg_start() and cg_stop() run CALLGRIND_START_INSTRUMENTATION "
        "and CALLGRIND_ZERO_STATS, and CALLGRIND_DUMP_STATS and CALLGRIND_STOP_INSTRUMENTATION",
    )
    arguments = parser.parse_args()
    toggles: tuple[Callable[[], object], ...] = (lambda: None, lambda: None)
    if arguments.toggle:
        library = ctypes.CDLL(arguments.toggle)
        toggles = (library.cg_start, library.cg_stop)
    anyio.run(run, arguments.subject, arguments.calls, arguments.concurrency, toggles)


if __name__ == "__main__":
    main()
