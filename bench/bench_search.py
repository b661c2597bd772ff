"""Tool search: how well and how fast ``at.tool_search`` ranks, against the README's word match.

Run: ``.venv/bin/python -m bench.bench_search`` (about twenty seconds; not part of the tests).

Quality: the queries of ``search_eval/queries.json`` over the catalog of ``search_eval/catalog.py``
(one tool per operation of the real OpenAPI documents of the corpus). For each ranker it reports
hit@5 (a right tool among the first five, what the model is shown by default), recall@5 (the
share of a query's right tools among the first five, up to five), MRR (one over the rank of the
first right tool, 0 past 20) and hit@1.

Speed: the median and 95th percentile time of one search, over every query, at the corpus's size
and at 10,000 tools (the corpus copied and perturbed), with the index's cache of expanded query
words cold (first run) and warm; and the time to build the index.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from amends_toolkit.presentations._index import COMMON_WORDS, Hits, SearchIndex, words
from bench.search_eval import catalog

QUERIES = Path(__file__).resolve().parent / "search_eval" / "queries.json"
_DEPTH = 20


class ReadmeMatch:
    """The README's scheme, read literally: each query word scores 2 when it is, or begins, a
    word of the tool's name and 1 when it is a word of its description; ties keep catalog order.
    A scan of every tool per query (it has no index)."""

    def __init__(self, tools: Sequence[tuple[str, str]], *, drop_common: bool = False) -> None:
        self._tools = [(words(name), set(words(description))) for name, description in tools]
        self._drop_common = drop_common

    def search(self, query: str, limit: int) -> Hits:
        terms = words(query)
        if self._drop_common:
            # the same common-word list as ours, to show how much of the gain it is
            terms = [term for term in terms if term not in COMMON_WORDS] or terms
        scored = []
        for position, (name, description) in enumerate(self._tools):
            score = 0
            for term in terms:
                if any(word == term or word.startswith(term) for word in name):
                    score += 2
                if term in description:
                    score += 1
            if score:
                scored.append((-score, position))
        scored.sort()
        return Hits(positions=tuple(p for _, p in scored[:limit]), matched=len(scored))


def evaluate(
    search: Callable[[str, int], Hits],
    names: Sequence[str],
    queries: Sequence[dict[str, object]],
) -> dict[str, float]:
    hit1 = hit5 = recall5 = reciprocal = 0.0
    for entry in queries:
        right = set(cast("list[str]", entry["tools"]))
        ranked = [names[p] for p in search(str(entry["query"]), _DEPTH).positions]
        first = next((i for i, name in enumerate(ranked) if name in right), None)
        top5 = set(ranked[:5])
        hit1 += first == 0
        hit5 += first is not None and first < 5
        recall5 += len(top5 & right) / min(len(right), 5)
        reciprocal += 0.0 if first is None else 1.0 / (first + 1)
    n = len(queries)
    return {"hit@1": hit1 / n, "hit@5": hit5 / n, "recall@5": recall5 / n, "MRR": reciprocal / n}


def scaled(tools: Sequence[tuple[str, str]], size: int, seed: int = 7) -> list[tuple[str, str]]:
    """The corpus tools copied until there are ``size``: each copy renamed and its description
    perturbed (a word dropped and two swapped), so the index sees distinct documents."""
    rng = random.Random(seed)
    out = list(tools)
    copy = 0
    while len(out) < size:
        copy += 1
        for name, description in tools:
            if len(out) == size:
                break
            prefix, _, local = name.partition("__")
            text = description.split()
            if len(text) > 2:
                del text[rng.randrange(len(text))]
                i, j = rng.randrange(len(text)), rng.randrange(len(text))
                text[i], text[j] = text[j], text[i]
            out.append((f"{prefix}{copy}__{local}", " ".join(text)))
    return out


def latency(index: SearchIndex, queries: Sequence[str], runs: int) -> dict[str, float]:
    """Per-search seconds: the first run over every query (cold cache), then the median of each
    query over ``runs`` more runs (warm). Both in wall time and in this process's CPU time,
    which a loaded machine inflates less."""
    cold = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, 5)
        cold.append(time.perf_counter() - start)
    wall: list[list[float]] = [[] for _ in queries]
    cpu: list[list[float]] = [[] for _ in queries]
    for _ in range(runs):
        for i, query in enumerate(queries):
            start, start_cpu = time.perf_counter(), time.process_time()
            index.search(query, 5)
            cpu[i].append(time.process_time() - start_cpu)
            wall[i].append(time.perf_counter() - start)
    figures = {"cold_median": statistics.median(cold), "cold_p95": _p95(cold)}
    for label, times in (("warm", wall), ("cpu", cpu)):
        per_query = sorted(statistics.median(t) for t in times)
        figures[f"{label}_median"] = statistics.median(per_query)
        figures[f"{label}_p95"] = _p95(per_query)
        figures[f"{label}_max"] = per_query[-1]
    return figures


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="warm runs per query (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    tools = catalog.build()
    names = [name for name, _ in tools]
    queries = json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]
    known = set(names)
    for entry in queries:
        missing = [tool for tool in entry["tools"] if tool not in known]
        if missing:
            raise SystemExit(f"{entry['query']!r} names tools not in the catalog: {missing}")

    rankers: dict[str, Callable[[str, int], Hits]] = {
        "readme (literal)": ReadmeMatch(tools).search,
        "readme, common words dropped": ReadmeMatch(tools, drop_common=True).search,
        "ours: bm25f only": SearchIndex(tools, prefix_factor=0.0, related_factor=0.0).search,
        "ours: + prefixes": SearchIndex(tools, related_factor=0.0).search,
        "ours (shipped)": SearchIndex(tools).search,
    }
    quality = {label: evaluate(search, names, queries) for label, search in rankers.items()}

    speed: dict[str, dict[str, float]] = {}
    texts = [str(entry["query"]) for entry in queries]
    for size in (len(tools), 1_000, 10_000):
        subset = tools[:size] if size <= len(tools) else scaled(tools, size)
        start = time.perf_counter()
        index = SearchIndex(subset)
        build = time.perf_counter() - start
        speed[f"{size} tools"] = {"build": build, **latency(index, texts, args.runs)}
        if size <= len(tools):
            readme = ReadmeMatch(subset)
            start = time.perf_counter()
            for text in texts:
                readme.search(text, 5)
            speed[f"{size} tools"]["readme_scan_mean"] = (time.perf_counter() - start) / len(texts)

    if args.json:
        print(
            json.dumps(
                {"tools": len(tools), "queries": len(queries), "quality": quality, "speed": speed},
                indent=1,
            )
        )
        return
    print(
        f"catalog: {len(tools)} tools from {len(catalog.DOCUMENTS)} documents; "
        f"{len(queries)} queries\n"
    )
    base = quality["readme (literal)"]
    print(f"{'ranker':32} {'hit@1':>7} {'hit@5':>7} {'recall@5':>9} {'MRR':>7}   MRR vs readme")
    for label, figures in quality.items():
        print(
            f"{label:32} {figures['hit@1']:7.3f} {figures['hit@5']:7.3f} "
            f"{figures['recall@5']:9.3f} {figures['MRR']:7.3f}   "
            f"x{figures['MRR'] / base['MRR']:.2f}"
        )
    print("\nsearch latency, microseconds per search (limit 5); cold: first search of each query")
    print("(its words' postings not cached yet), warm: median of --runs; cpu: process CPU time")
    print(
        f"{'size':12} {'build ms':>9} {'cold med':>9} {'cold p95':>9} {'warm med':>9} "
        f"{'warm p95':>9} {'warm max':>9} {'cpu med':>9} {'cpu p95':>9} {'cpu max':>9}"
    )
    for label, figures in speed.items():
        print(
            f"{label:12} {figures['build'] * 1e3:9.1f} "
            + " ".join(
                f"{figures[key] * 1e6:9.1f}"
                for key in (
                    "cold_median",
                    "cold_p95",
                    "warm_median",
                    "warm_p95",
                    "warm_max",
                    "cpu_median",
                    "cpu_p95",
                    "cpu_max",
                )
            )
        )
        if "readme_scan_mean" in figures:
            print(
                f"{'':12} readme scan (no index): {figures['readme_scan_mean'] * 1e6:.0f} us mean"
            )


if __name__ == "__main__":
    main()
