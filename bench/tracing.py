"""What tracing costs a call (issue 34): CPU per call with the OpenTelemetry API absent, with it
present and no tracer provider (the library's state unless a host sets one), and with the SDK's
provider set (every call traced, spans batched to an exporter that drops them).

Run: ``.venv/bin/python -m bench.tracing [--rounds 7] [--calls 20000]`` (about a minute; not part
of the tests). Each state runs in a fresh interpreter (a provider is set once per process, and
"absent" hides the ``opentelemetry`` package before anything imports it); the states take turns
round by round, so a busy machine disturbs them alike, and each figure is the median of the
rounds. Ratios are to the API absent, from the same rounds.

Subjects, each a call after another in one task:

- ``check``: the one check a call makes (``_tracing.tracer()``), in nanoseconds;
- ``toolkit``: ``toolkit.call`` over an in-process source (lookup, schema check, one span);
- ``session, inline actor``: ``session.call`` over the source's actor, run in the caller's task
  (two spans);
- ``toolkit, mailbox``: ``toolkit.call`` over an actor that serves it in a worker (two spans,
  the context carried in the message);
- ``MCP, raw server``: ``toolkit.call`` over an actor and ``at.mcp.http`` to the raw MCP server
  (``bench/_raw_mcp_server.py``, stateless) on loopback: three spans and ``_meta`` sent; CPU of
  this process only.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATES = ("absent", "no provider", "provider")
SUBJECTS = ("check", "toolkit", "session, inline actor", "toolkit, mailbox", "MCP, raw server")


def _measure(state: str, calls: int, port: int) -> dict[str, float]:
    """In a fresh interpreter: each subject's CPU per call, in µs (``check`` in ns)."""
    if state == "absent":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    import anyio
    import httpx

    import amends_toolkit as at
    from amends_toolkit import JsonObject, JsonValue, _tracing

    if state == "provider":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        class Dropped(SpanExporter):
            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Dropped()))
        trace.set_tracer_provider(provider)
    assert (_tracing.tracer() is None) == (state != "provider")

    schema: JsonObject = {"type": "object", "properties": {"id": {"type": "integer"}}}

    class Echo:
        name = "bench"

        async def discover(self) -> Sequence[at.ToolDefinition]:
            return [at.ToolDefinition(name="echo", description="Echo.", input_schema=schema)]

        async def call(self, tool: str, input: JsonObject) -> JsonValue:
            return input

    def timed(run: Callable[[], object], count: int) -> float:
        started = time.process_time()
        for _ in range(count):
            run()
        return (time.process_time() - started) / count

    async def timed_async(call: Callable[[], Awaitable[object]], count: int) -> float:
        for _ in range(count // 10):  # warm: validators compiled, caches filled
            await call()
        started = time.process_time()
        for _ in range(count):
            await call()
        return (time.process_time() - started) / count

    async def main() -> dict[str, float]:
        found = {"check": timed(_tracing.tracer, calls * 10) * 1e9}
        source = Echo()
        definitions = await source.discover()
        direct = at.source_toolkit(source, definitions)
        found["toolkit"] = 1e6 * await timed_async(lambda: direct.call("echo", {"id": 1}), calls)
        async with at.Runtime() as runtime:
            inline = await runtime.spawn(Echo(), inline=True)
            toolkit = at.source_toolkit(inline, definitions)
            async with at.Session(toolkit, approve=lambda name, input: True) as session:
                found["session, inline actor"] = 1e6 * await timed_async(
                    lambda: session.call("echo", {"id": 1}), calls
                )
            sent = await runtime.spawn(Echo(), inline=False)
            mailbox = at.source_toolkit(sent, definitions)
            found["toolkit, mailbox"] = 1e6 * await timed_async(
                lambda: mailbox.call("echo", {"id": 1}), calls
            )
            async with httpx.AsyncClient() as client:
                mcp = await runtime.spawn(
                    at.mcp.http(name="raw", url=f"http://127.0.0.1:{port}/mcp", client=client)
                )
                wire = at.source_toolkit(mcp, await mcp.discover())
                found["MCP, raw server"] = 1e6 * await timed_async(
                    lambda: wire.call("echo", {"text": "hi"}), max(200, calls // 20)
                )
        return found

    return anyio.run(main)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, server: subprocess.Popen[bytes]) -> None:
    while True:
        if server.poll() is not None:
            raise RuntimeError("the raw MCP server did not start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)


def run(rounds: int, calls: int) -> dict[str, dict[str, float]]:
    """Every state's median per subject over ``rounds``, the states in turn each round."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(HERE / "_raw_mcp_server.py"), str(port), "stateless"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, server)
        seen: dict[str, dict[str, list[float]]] = {s: {k: [] for k in SUBJECTS} for s in STATES}
        for _ in range(rounds):
            for state in STATES:
                output = subprocess.run(
                    [sys.executable, "-m", "bench.tracing", "--one", state, "--calls", str(calls),
                     "--port", str(port)],
                    capture_output=True, check=True, text=True, cwd=HERE.parent,
                )  # fmt: skip
                for subject, value in json.loads(output.stdout).items():
                    seen[state][subject].append(value)
    finally:
        server.terminate()
        server.wait(10)
    return {
        state: {subject: statistics.median(values) for subject, values in subjects.items()}
        for state, subjects in seen.items()
    }


def report(medians: dict[str, dict[str, float]], rounds: int, calls: int) -> str:
    lines = [
        f"Medians of {rounds} rounds, {calls:,} calls a subject a round (MCP: "
        f"{max(200, calls // 20):,}); CPU of the calling process. Ratios: to the API absent.",
        "",
        "| subject | API absent | no provider | provider set | no provider / absent |"
        " provider / absent |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for subject in SUBJECTS:
        unit = "ns" if subject == "check" else "µs"
        absent, off, on = (medians[state][subject] for state in STATES)
        lines.append(
            f"| {subject} ({unit}/call) | {absent:,.2f} | {off:,.2f} | {on:,.2f} |"
            f" {off / absent:.2f}x | {on / absent:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--one", choices=STATES, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one is not None:
        print(json.dumps(_measure(options.one, options.calls, options.port)))
        return
    print(report(run(options.rounds, options.calls), options.rounds, options.calls))


if __name__ == "__main__":
    main()
