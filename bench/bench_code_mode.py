"""Code mode's costs: a run against calling the tool directly, a pause for a person, and how long
the declarations are, each against a baseline measured in the same run.

Run: ``.venv/bin/python bench/bench_code_mode.py`` (under a minute; not part of the tests).

Runs: one in-process tool that answers its input. The baseline is ``toolkit.call`` of the tool;
the subjects are ``execute`` runs whose code makes that one call and returns its answer, on
:class:`InProcessRuntime` (the cost of code mode itself) and on :class:`MontyRuntime` (a sandbox
in a worker process: prelude, feed, one call answered as a future, the result converted). Pause:
the same Monty run when the tool needs approval and the session's ``approve`` says yes at once,
against the run that asks no one: the difference is a pause (the snapshot dumped, the worker
let go) and a resume (a worker checked out, the snapshot loaded).

Declarations: the first 50 operations of each document of the OpenAPI corpus that has 50, as
code mode declares them to the model (Python stubs), against the same tools' JSON (name,
description and input schema, compact), in characters.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.presentations import Paused
from amends_toolkit.presentations._code_runtime import attributes
from amends_toolkit.presentations._declarations import declare
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "openapi-corpus"
SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "text": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}
INPUT: JsonObject = {"id": 7, "text": "hello"}
CODE: JsonObject = {"code": 'return await tools.echo({"id": 7, "text": "hello"})'}


async def echo(input: JsonObject) -> JsonValue:
    return input


def toolkit(*, approval: bool) -> Toolkit:
    tool = Tool(name="echo", description="Echo.", input_schema=SCHEMA, needs_approval=approval)
    return Toolkit.from_entries([ToolEntry(tool=tool, handler=echo)])


async def seconds_each(call: Callable[[], Awaitable[object]], runs: int) -> float:
    for _ in range(max(1, runs // 10)):  # warm up
        await call()
    started = time.perf_counter()
    for _ in range(runs):
        await call()
    return (time.perf_counter() - started) / runs


async def bench_runs(runs: int) -> None:
    direct = toolkit(approval=False)
    in_process = at.code_mode(direct, at.InProcessRuntime())
    async with at.MontyRuntime(max_processes=1) as monty:
        in_monty = at.code_mode(direct, monty)
        asking = at.code_mode(toolkit(approval=True), monty, approval="ask")
        async with at.Session(asking, approve=lambda _, __: True) as session:
            answer = await session.call("execute", CODE)
            assert answer == {"result": INPUT, "logs": []}, answer
            subjects: list[tuple[str, Callable[[], Awaitable[object]], int]] = [
                ("toolkit.call (baseline)", lambda: direct.call("echo", INPUT), runs * 10),
                ("execute, InProcessRuntime", lambda: in_process.call("execute", CODE), runs * 10),
                ("execute, MontyRuntime", lambda: in_monty.call("execute", CODE), runs),
                ("execute, Monty, one approval", lambda: session.call("execute", CODE), runs),
            ]
            print(f"\none run making one tool call ({runs} Monty runs, 10x as many others)")
            measured: dict[str, float] = {}
            for label, call, count in subjects:
                each = await seconds_each(call, count)
                measured[label] = each
                baseline = measured["toolkit.call (baseline)"]
                print(
                    f"  {label:<30} {each * 1e6:>10,.0f} us   {each / baseline:>8,.0f}x the"
                    " baseline's time"
                )
            pause = measured["execute, Monty, one approval"] - measured["execute, MontyRuntime"]
            print(f"  a pause and a resume: {pause * 1e6:,.0f} us more than the same run's")
        paused = await monty.start(
            str(CODE["code"]), ["echo"], echo_call(direct), approval=_EchoWaits()
        )
        assert isinstance(paused, Paused)
        print(f"  a paused run of this code, dumped: {len(paused.dump()):,} bytes")


def echo_call(direct: Toolkit) -> Callable[[str, JsonObject], Awaitable[JsonValue]]:
    async def call(name: str, input: JsonObject) -> JsonValue:
        return (await direct.invoke(name, input)).unwrap()

    return call


class _EchoWaits:
    def needed(self, name: str, input: JsonObject) -> bool:
        return True

    async def ask(self, name: str, input: JsonObject) -> JsonValue:
        raise AssertionError("not asked in the bench")


def bench_declarations(size: int) -> None:
    print(f"\ndeclarations of {size} tools from the OpenAPI corpus, in characters")
    for path in sorted(CORPUS.glob("*-3.*.*")):
        try:
            operations = at.openapi.read_operations(at.openapi.read_document(path)).operations
        except Exception as error:  # noqa: BLE001 - a document this bench cannot read is named
            print(f"  {path.name}: not read ({error})")
            continue
        if len(operations) < size:
            continue
        tools = [
            Tool(
                name=op.definition.name,
                description=op.definition.description,
                input_schema=op.definition.input_schema,
            )
            for op in operations[:size]
        ]
        by_name = attributes([tool.name for tool in tools])
        stubs = declare([(by_name[tool.name], tool) for tool in tools])
        schemas = json.dumps(
            [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in tools
            ],
            separators=(",", ":"),
            ensure_ascii=False,
        )
        print(
            f"  {path.name:<36} stubs {len(stubs):>8,}   JSON schemas {len(schemas):>8,}"
            f"   {len(stubs) / len(schemas):5.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--tools", type=int, default=50)
    args = parser.parse_args()
    anyio.run(bench_runs, args.runs)
    bench_declarations(args.tools)


if __name__ == "__main__":
    main()
