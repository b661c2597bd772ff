"""Costs as the work grows, each against a baseline measured in the same run:

- assembling 1,000, 10,000 and 100,000 tools cold (each run in a fresh interpreter, in CPU
  time), against making the same ``<source>__<tool>`` names in a dict, and whether it grows
  linearly (100,000 against ten times 10,000), with the time the cyclic garbage collector took
  inside the timed run and the fresh pages it faulted in (see bench/NOTES.md);
- the catalog codec: dump and load 10,000 definitions, against the same dicts made and read by
  hand;
- input validation: the library's validator (jsonschema-rs, compiled once per tool) against the
  ``jsonschema`` package's validator compiled once, over the same inputs;
- ``import`` time of the package, against ``mcp``, ``fastmcp`` and ``pydantic_ai``, each in a fresh
  interpreter.
"""

from __future__ import annotations

import functools
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.runtime._validation import validator_for
from bench._harness import Measure, best_of

SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "text": {"type": "string", "maxLength": 100},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id"],
    "additionalProperties": False,
}


class Nowhere:
    name = "bench"

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return []

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        return input


def definitions(size: int) -> list[at.ToolDefinition]:
    return [
        at.ToolDefinition(
            name=f"tool.{i}",
            description=f"Tool {i}.",
            input_schema=SCHEMA,
            annotations=at.Annotations(read_only=i % 2 == 0),
        )
        for i in range(size)
    ]


def by_hand_names(member: at.Member) -> dict[str, at.ToolDefinition]:
    return {f"{member.source.name}__{d.name}": d for d in member.definitions}


SIZES = (1_000, 10_000, 100_000)
ROUNDS = 5
SUBJECTS = ("assemble", "names")


def cold_run(subject: str, size: int) -> dict[str, float]:
    """One cold run, in this (fresh) interpreter: ``size`` definitions made, collected, then
    assembled once (``"assemble"``) or named in a dict (``"names"``). Gives its CPU time, the
    part of it the cyclic collector took (read with ``gc.callbacks``), and the fresh pages it
    faulted in, both sizes alike in memory the process never used before."""
    member = at.Member(Nowhere(), definitions(size))
    function: Callable[[], object] = (
        functools.partial(at.assemble, [member], lambda _, __: "allow")
        if subject == "assemble"
        else functools.partial(by_hand_names, member)
    )
    spent, started_at = [0.0], [0.0]

    def watch(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            started_at[0] = time.process_time()
        else:
            spent[0] += time.process_time() - started_at[0]

    gc.collect()
    gc.callbacks.append(watch)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    started = time.process_time()
    function()
    elapsed = time.process_time() - started
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    gc.callbacks.remove(watch)
    return {"seconds": elapsed, "collector": spent[0], "faults": faults}


def cold(subject: str, size: int) -> dict[str, float]:
    """:func:`cold_run` in a fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-m", "bench.costs", subject, str(size)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    result: dict[str, float] = json.loads(run.stdout)
    return result


FLOOR_GROWTH = "the names in a dict, 100,000 against 10,000 (linear is 10)"
"""How the baseline grows: what memory alone costs this machine for ten times the objects."""


def assembly() -> list[Measure]:
    """Cold assembly: every run in a fresh interpreter, so that 10,000 tools cannot reuse the
    memory an earlier run freed while 100,000 fault in fresh pages (in one process they did: a
    run of 10,000 faulted no page, one of 100,000 thousands). Medians of ``ROUNDS`` rounds, each
    running every size and subject in turn; a growth is the median of the rounds' ratios."""
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for _ in range(ROUNDS):
        for size in SIZES:
            for subject in SUBJECTS:
                runs.setdefault((subject, size), []).append(cold(subject, size))

    def median(subject: str, size: int, key: str) -> float:
        return statistics.median(run[key] for run in runs[subject, size])

    def growth(subject: str, own: bool = False) -> float:
        def time_of(run: dict[str, float]) -> float:
            return run["seconds"] - (run["collector"] if own else 0.0)

        pairs = zip(runs[subject, 100_000], runs[subject, 10_000], strict=True)
        return statistics.median(time_of(large) / time_of(small) for large, small in pairs)

    measures = []
    for size in SIZES:
        measures += [
            Measure(
                group="assembly",
                subject=f"assemble {size:,} tools, cold (CPU)",
                value=median("assemble", size, "seconds") * 1000,
                unit="ms",
                baseline="the names in a dict",
                baseline_value=median("names", size, "seconds") * 1000,
            ),
            Measure(
                group="assembly",
                subject=f"of which the cyclic garbage collector, {size:,} tools",
                value=median("assemble", size, "collector") * 1000,
                unit="ms",
            ),
            Measure(
                group="assembly",
                subject=f"fresh pages faulted in, {size:,} tools",
                value=median("assemble", size, "faults"),
                unit="pages",
                baseline="the names in a dict",
                baseline_value=median("names", size, "faults"),
            ),
        ]
    measures += [
        Measure(
            group="assembly",
            subject="100,000 tools against 10,000 (linear is 10)",
            value=growth("assemble"),
            unit="x",
        ),
        Measure(
            group="assembly",
            subject="the same without the collector's time (linear is 10)",
            value=growth("assemble", own=True),
            unit="x",
        ),
        Measure(group="assembly", subject=FLOOR_GROWTH, value=growth("names"), unit="x"),
    ]
    return measures


def catalog() -> list[Measure]:
    tools = definitions(10_000)
    data = at.catalog.dump(tools)
    assert isinstance(data, list)
    items = [item for item in data if isinstance(item, dict)]

    def by_hand_dump() -> list[dict[str, object]]:
        return [
            {
                "name": d.name,
                "description": d.description,
                "inputSchema": d.input_schema,
                "annotations": {"readOnly": d.annotations.read_only},
            }
            for d in tools
        ]

    def by_hand_load() -> list[at.ToolDefinition]:
        definitions = []
        for item in items:
            name, description, schema = item["name"], item["description"], item["inputSchema"]
            annotations = item["annotations"]
            assert isinstance(name, str)
            assert isinstance(description, str)
            assert isinstance(schema, dict)
            assert isinstance(annotations, dict)
            read_only = annotations["readOnly"]
            assert isinstance(read_only, bool)
            definitions.append(
                at.ToolDefinition(
                    name=name,
                    description=description,
                    input_schema=schema,
                    annotations=at.Annotations(read_only=read_only),
                )
            )
        return definitions

    return [
        Measure(
            group="catalog codec",
            subject="dump 10,000 definitions",
            value=best_of(lambda: at.catalog.dump(tools)) * 1000,
            unit="ms",
            baseline="dicts made by hand",
            baseline_value=best_of(by_hand_dump) * 1000,
        ),
        Measure(
            group="catalog codec",
            subject="load 10,000 definitions",
            value=best_of(lambda: at.catalog.load(list[at.ToolDefinition], data)) * 1000,
            unit="ms",
            baseline="definitions made by hand",
            baseline_value=best_of(by_hand_load) * 1000,
        ),
    ]


def validation() -> list[Measure]:
    inputs: list[JsonObject] = [
        {"id": i, "text": "x" * (i % 50), "tags": list[JsonValue](["a", "b"][: i % 3])}
        for i in range(5_000)
    ]
    inputs += [{"id": -1}, {"text": "no id"}, {"id": 1, "other": True}] * 100
    ours = validator_for(SCHEMA, tool="bench")
    theirs = jsonschema.Draft202012Validator(SCHEMA)

    def run_ours() -> None:
        for value in inputs:
            ours.check(value)

    def run_theirs() -> None:
        for value in inputs:
            if not theirs.is_valid(value):
                list(theirs.iter_errors(value))

    return [
        Measure(
            group="input validation",
            subject=f"check {len(inputs):,} inputs",
            value=best_of(run_ours) * 1e6 / len(inputs),
            unit="µs per input",
            baseline="the jsonschema package, compiled once",
            baseline_value=best_of(run_theirs) * 1e6 / len(inputs),
        )
    ]


def import_time(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(3)
    ]
    return statistics.median(runs) * 1000


def imports() -> list[Measure]:
    ours = import_time("amends_toolkit")
    return [
        Measure(
            group="import time",
            subject=f"import amends_toolkit against import {other}",
            value=ours,
            unit="ms",
            baseline=f"import {other}",
            baseline_value=import_time(other),
        )
        for other in ("mcp", "fastmcp", "pydantic_ai")
    ]


def run() -> list[Measure]:
    measures: list[Measure] = []
    for step in (assembly, catalog, validation, imports):
        print(f"  {step.__name__}", flush=True)
        measures += step()
    return measures


if __name__ == "__main__":  # one cold run, for assembly(): python -m bench.costs SUBJECT SIZE
    print(json.dumps(cold_run(sys.argv[1], int(sys.argv[2]))))
