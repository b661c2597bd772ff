"""Instructions per MCP call, counted by valgrind's callgrind: the bare JSON-RPC client against
``at.mcp.http`` and ``Session -> Toolkit -> actor -> at.mcp.http``, over one ``httpx2`` client, against the raw echo server (in its own process, not
counted). Not part of ``python -m bench``; it needs ``valgrind`` and a C compiler.

    python -m bench.client_instructions [--mode stateless] [--concurrency 512] [--calls 1024]
        [--repeats 2]

On this machine (a virtual machine with no performance counters) CPU time moves by ±10% from
run to run at 512 callers; an instruction count does not. The client runs under callgrind with
instrumentation off until the subjects are built and warmed up; each measured turn (``calls``
calls, ``concurrency`` callers) is counted alone, between two client requests of callgrind
(``CALLGRIND_START_INSTRUMENTATION`` and ``CALLGRIND_DUMP_STATS_AT``) made through ctypes from a
library compiled for the run. The subjects take turns, ``repeats`` times each. Under valgrind the
client runs some 30 times slower than the server, so timeouts are an hour; what is counted is the
client's work, not its timing. A run at 512 callers takes about ten minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import gc
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

import anyio
import httpx2

import amends_toolkit as at
from bench._harness import POOL, Call, pool_limits, server_process
from bench.client_cpu import INPUT, turn
from bench.mcp_client import bare_client

TOGGLE = """
#include <valgrind/callgrind.h>
void counted(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
void dumped(const char *label) { CALLGRIND_DUMP_STATS_AT(label); CALLGRIND_STOP_INSTRUMENTATION; }
"""
SUBJECTS = ("bare", "source", "session-actor")


async def counted(arguments: argparse.Namespace) -> None:
    """The client under callgrind: each subject's turns, each counted alone."""
    url = f"http://127.0.0.1:{arguments.port}/mcp"
    timeout = 3600.0
    async with contextlib.AsyncExitStack() as stack:
        limits = pool_limits(httpx2.Limits, POOL)
        client = await stack.enter_async_context(httpx2.AsyncClient(timeout=timeout, limits=limits))
        source = at.mcp.http(name="bench", url=url, client=client, timeout=timeout)
        await stack.enter_async_context(source.lifespan())
        await source.discover()
        made: dict[str, Call] = {
            "bare": await stack.enter_async_context(bare_client(client, url, arguments.mode)),
            "source": functools.partial(source.call, "echo", INPUT),
            "session-actor": await whole_path(stack, client, url, timeout),
        }
        await count_turns(made, arguments)


async def count_turns(made: Mapping[str, Call], arguments: argparse.Namespace) -> None:
    """Each subject's turns (``calls`` calls, ``concurrency`` callers), each counted alone under
    callgrind through the ``toggle`` library: all warmed up first, then ``repeats`` rounds, the
    subjects in turn, every other round in reverse."""
    toggle = ctypes.CDLL(arguments.toggle)
    labels = tuple(made)
    each = max(1, arguments.calls // arguments.concurrency)
    for call in made.values():
        await turn(call, max(1, each // 2), arguments.concurrency)
    gc.collect()
    gc.freeze()
    for repeat in range(arguments.repeats):
        for label in labels if repeat % 2 == 0 else labels[::-1]:
            gc.collect()
            toggle.counted()
            await turn(made[label], each, arguments.concurrency)
            toggle.dumped(f"{label}.{each * arguments.concurrency}".encode())


async def whole_path(
    stack: contextlib.AsyncExitStack, client: httpx2.AsyncClient, url: str, wire_timeout: float
) -> Call:
    """``Session -> Toolkit -> actor -> at.mcp.http``, spawned with the runtime's defaults."""
    runtime = await stack.enter_async_context(at.Runtime())
    ref = await runtime.spawn(
        at.mcp.http(name="bench", url=url, client=client, timeout=wire_timeout)
    )
    toolkit = at.assemble([at.Member(ref, await ref.discover())], lambda _, __: "allow")
    session = await stack.enter_async_context(at.Session(toolkit, approve=lambda _, __: False))
    return functools.partial(session.call, "bench__echo", INPUT)


def measure(arguments: argparse.Namespace) -> None:
    per_call = counted_per_call(
        "bench.client_instructions",
        ("_raw_mcp_server.py", arguments.mode),
        [f"--mode={arguments.mode}"],
        arguments,
    )
    bare, source, whole = (per_call[label] for label in SUBJECTS)
    print(
        f"{arguments.mode:9} c={arguments.concurrency:<3}  instructions per call: "
        f"bare {bare / 1e6:.3f} M  at.mcp.http {source / 1e6:.3f} M  ({source / bare:.3f}x)  "
        f"Session→Toolkit→actor {whole / 1e6:.3f} M  ({whole / bare:.3f}x)"
    )


def counted_per_call(
    module: str, server: Sequence[str], options: Sequence[str], arguments: argparse.Namespace
) -> dict[str, float]:
    """``python -m module --counted`` (whose subjects :func:`count_turns` counts) under callgrind,
    against the bench server ``server`` (its script and arguments) in its own process, with
    ``options`` and the turns' ``concurrency``, ``calls`` and ``repeats``: the median of each
    subject's instructions a call over its counted turns."""
    with tempfile.TemporaryDirectory() as directory:
        where = Path(directory)
        library = where / "toggle.so"
        (where / "toggle.c").write_text(TOGGLE)
        subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(where / "toggle.c")],
            check=True,
        )
        with server_process(*server) as running:
            subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    "--instr-atstart=no",
                    f"--callgrind-out-file={where}/counted.%p",
                    sys.executable,
                    "-m",
                    module,
                    "--counted",
                    f"--port={running.port}",
                    f"--toggle={library}",
                    *options,
                    f"--concurrency={arguments.concurrency}",
                    f"--calls={arguments.calls}",
                    f"--repeats={arguments.repeats}",
                ],
                check=True,
                stderr=subprocess.DEVNULL,
            )
        per_call: dict[str, list[float]] = {}
        for dump in where.glob("counted.*.*"):
            text = dump.read_text()
            trigger = re.search(r"^desc: Trigger: Client Request: ([\w-]+)\.(\d+)$", text, re.M)
            total = re.search(r"^summary: (\d+)$", text, re.M)
            if trigger is not None and total is not None:
                per_call.setdefault(trigger[1], []).append(int(total[1]) / int(trigger[2]))
    return {label: statistics.median(counts) for label, counts in per_call.items()}


def main() -> None:
    parser = options("python -m bench.client_instructions", concurrency=512, calls=1024)
    parser.add_argument("--mode", default="stateless", choices=["stateless", "session"])
    run(parser.parse_args(), counted, measure)


def options(prog: str, *, concurrency: int, calls: int) -> argparse.ArgumentParser:
    """A count's options (the turns' callers and calls, and how many turns of each subject), and
    those :func:`counted_per_call` gives the run it counts."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--concurrency", type=int, default=concurrency)
    parser.add_argument("--calls", type=int, default=calls, help="calls of a subject a turn")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--counted", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--toggle", help=argparse.SUPPRESS)
    return parser


def run(
    arguments: argparse.Namespace,
    counted: Callable[[argparse.Namespace], Awaitable[None]],
    measure: Callable[[argparse.Namespace], None],
) -> None:
    """The counted run (under callgrind) when it is one, else the count that starts it."""
    if arguments.counted:
        anyio.run(counted, arguments)
    else:
        measure(arguments)


if __name__ == "__main__":
    main()
