"""Tool search for ``python -m bench``: ``bench/bench_search.py``'s figures (quality on the
held-out set's halves and the in-repo set, against plain BM25; latency of common-word queries at
the corpus's size and at 10,000 tools, against a plain inverted index), in its own process."""

from __future__ import annotations

import json
import subprocess
import sys

from bench._harness import Measure


def run() -> list[Measure]:
    output = subprocess.run(
        [sys.executable, "-m", "bench.bench_search", "--json", "--runs", "3"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    figures = json.loads(output)
    quality = figures["quality"]
    bm25 = quality["plain BM25 (baseline)"]
    measures = []
    # the built-in index, and the hybrid of it and WordLlama when wordllama is installed
    for ranker, tag in (("ours (shipped)", ""), ("ours + WordLlama (hybrid)", "hybrid, ")):
        for column in quality.get(ranker, {}):
            for metric in ("recall@1", "recall@5", "MRR"):
                measures.append(
                    Measure(
                        group=f"tool search quality over {figures['tools']:,} tools",
                        subject=f"{tag}{column}: {metric}",
                        value=quality[ranker][column][metric],
                        unit="",
                        baseline="plain BM25 (k1 1.2, b 0.75, name x3)",
                        baseline_value=bm25[column][metric],
                    )
                )
    speed = figures["speed"]
    for label in speed:
        where, _, ranker = label.rpartition(", ")
        if ranker not in ("ours", "hybrid") or "common" not in label:
            continue
        plain = speed[f"{where}, plain index"]
        for key in ("p50", "p95"):
            measures.append(
                Measure(
                    group="tool search latency (CPU per search, limit 5)",
                    subject=f"{where}{', hybrid' if ranker == 'hybrid' else ''}: {key}",
                    value=speed[label][key] * 1e3,
                    unit="ms",
                    baseline="a plain inverted index",
                    baseline_value=plain[key] * 1e3,
                )
            )
    return measures
