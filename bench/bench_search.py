"""Tool search: how well and how fast ``at.tool_search`` ranks, against plain BM25 and a plain
inverted index.

Run: ``.venv/bin/python -m bench.bench_search`` (about a minute; not part of the tests).

Quality, over the catalog of ``search_eval/catalog.py`` (the tools the library's OpenAPI reader
gives for the real documents of the corpus, all searched at once), on three query sets:

- ``held-out dev`` and ``held-out test``: the two halves of ``search_eval/heldout.json``,
  written from each API's purpose before looking at its operations. The ranker's choices were
  made on the dev half only; the test half is the figure to quote.
- ``in-repo``: ``search_eval/queries.json``, written from the operations' summaries.

Rankers: plain BM25 (the issue's baseline), ours, and ours without one of its signals (the
parameters, the other forms of a word, the summary field, the keywords, the kinds); and, when
``wordllama`` is installed (a dev dependency), the example hybrid of ours and WordLlama
embeddings (``at.presentation.HybridRanker``), a ranker a host brings through ``ranker=``.

Each is reported over all its queries (a query whose every answer the reader skips counts as a
miss) and over the queries with an answer the reader keeps. Per ranker: recall@1 (the first
tool is right), recall@5 (the share of a query's right tools among the first five, up to five)
and MRR (one over the rank of the first right tool, 0 past 20).

Speed: per-search time at the corpus's size and at 10,000 tools (the corpus copied and
perturbed), over queries of the catalog's commonest words (the worst case: every word has
thousands of tools) and over the held-out queries, for ours and for a plain inverted index
(the same postings, every one summed, in C-level passes); the first search of each query
(cold: its words' postings not cached yet) and the median of later ones (warm). The hybrid's
too, when it is there; its build embeds every tool.
"""

from __future__ import annotations

import argparse
import heapq
import importlib.util
import json
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from itertools import repeat
from operator import add, neg
from pathlib import Path

import attrs

from amends_toolkit.presentations._index import SearchIndex
from amends_toolkit.presentations._words import COMMON_WORDS, query_terms, stem, words
from amends_toolkit.protocols.openapi._reader import _fit
from amends_toolkit.runtime import Tool
from bench.search_eval import catalog

EVAL = Path(__file__).resolve().parent / "search_eval"
_DEPTH = 20
Rank = Callable[[str, int], Sequence[int]]


def hybrid(tools: Sequence[Tool]) -> Rank | None:
    """The example hybrid ranker (ours and WordLlama) over ``tools``, or ``None`` when
    ``wordllama`` is not installed."""
    if importlib.util.find_spec("wordllama") is None:
        return None
    from amends_toolkit.presentations._hybrid import HybridRanker

    ranker = HybridRanker.with_wordllama(tools)
    return lambda query, limit: ranker.rank(query, limit)[0]


class PlainBM25:
    """BM25 (k1 = 1.2, b = 0.75) over one bag of each tool's name and description words, the
    name counted three times; the same words and stems as ours, no other forms of a word."""

    def __init__(self, tools: Sequence[Tool], k1: float = 1.2, b: float = 0.75) -> None:
        bags = [
            [stem(w) for w in words(tool.name)] * 3 + [stem(w) for w in words(tool.description)]
            for tool in tools
        ]
        average = sum(map(len, bags)) / max(len(bags), 1)
        frequencies: list[dict[str, int]] = []
        documents: dict[str, int] = {}
        for bag in bags:
            counts: dict[str, int] = {}
            for term in bag:
                counts[term] = counts.get(term, 0) + 1
            frequencies.append(counts)
            for term in counts:
                documents[term] = documents.get(term, 0) + 1
        self._postings: dict[str, dict[int, float]] = {}
        for doc, (bag, counts) in enumerate(zip(bags, frequencies, strict=True)):
            norm = k1 * (1 - b + b * len(bag) / average)
            for term, tf in counts.items():
                df = documents[term]
                idf = math.log(1 + (len(bags) - df + 0.5) / (df + 0.5))
                self._postings.setdefault(term, {})[doc] = idf * tf * (k1 + 1) / (tf + norm)

    def rank(self, query: str, limit: int) -> list[int]:
        scores: dict[int, float] = {}
        for term in dict.fromkeys(stem(w) for w in words(query)):
            for doc, score in self._postings.get(term, {}).items():
                scores[doc] = scores.get(doc, 0.0) + score
        return [doc for _, doc in heapq.nsmallest(limit, ((-s, d) for d, s in scores.items()))]


def plain_index(index: SearchIndex, query: str, limit: int) -> tuple[list[int], int]:
    """A plain inverted index over our postings: every posting of every query word summed (in
    C-level passes), then the best ``limit``. What ``index.rank`` must equal, without its trick."""
    scores: dict[int, float] = {}
    rows = index.terms(query)
    for row in rows:
        if row.finds:
            docs = list(row.scores)
            totals = map(add, map(scores.get, docs, repeat(0.0)), row.scores.values())
        else:  # a kind the query asks for: it scores only the tools its words found
            docs = list(scores)
            totals = map(add, scores.values(), map(row.scores.get, docs, repeat(0.0)))
        scores.update(zip(docs, totals, strict=True))
    best = heapq.nsmallest(limit, zip(map(neg, scores.values()), scores, strict=True))
    return [doc for _, doc in best], len(scores)


def query_sets(names: set[str]) -> dict[str, list[dict[str, object]]]:
    heldout = json.loads((EVAL / "heldout.json").read_text(encoding="utf-8"))["queries"]
    inrepo = json.loads((EVAL / "queries.json").read_text(encoding="utf-8"))["queries"]
    for entry in inrepo:
        # written against the documents' operationIds: named here as the reader names them
        entry["tools"] = [
            f"{short}__{_fit(local)}"
            for short, _, local in (t.partition("__") for t in entry["tools"])
        ]
    sets = {
        "held-out dev": [q for q in heldout if q["split"] == "dev"],
        "held-out test": [q for q in heldout if q["split"] == "test"],
        "in-repo": inrepo,
    }
    for queries in sets.values():
        for entry in queries:
            unknown = [t for t in entry["tools"] if t not in names]
            if unknown:
                raise SystemExit(f"{entry['query']!r} names tools not in the catalog: {unknown}")
    return sets


def evaluate(
    rank: Rank, names: Sequence[str], queries: Sequence[dict[str, object]], kept: set[str]
) -> dict[str, float]:
    first_right = recall5 = reciprocal = 0.0
    for entry in queries:
        right = set(entry["tools"])  # type: ignore[call-overload]
        ranked = [names[p] for p in rank(str(entry["query"]), _DEPTH)]
        first = next((i for i, name in enumerate(ranked) if name in right), None)
        first_right += first == 0
        recall5 += len(set(ranked[:5]) & right) / min(len(right), 5)
        reciprocal += 0.0 if first is None else 1.0 / (first + 1)
    n = max(len(queries), 1)
    return {"recall@1": first_right / n, "recall@5": recall5 / n, "MRR": reciprocal / n}


def kept_only(queries: Sequence[dict[str, object]], kept: set[str]) -> list[dict[str, object]]:
    """The queries with an answer the reader keeps, judged on those answers only."""
    out = []
    for entry in queries:
        right = [t for t in entry["tools"] if t in kept]  # type: ignore[attr-defined]
        if right:
            out.append({**entry, "tools": right})
    return out


def scaled(tools: Sequence[Tool], size: int, seed: int = 7) -> list[Tool]:
    """The corpus tools copied until there are ``size``: each copy renamed and its description
    perturbed (a word dropped and two swapped), so the index sees distinct documents."""
    rng = random.Random(seed)
    out = list(tools)
    copy = 0
    while len(out) < size:
        copy += 1
        for tool in tools:
            if len(out) == size:
                break
            prefix, _, local = tool.name.partition("__")
            text = tool.description.split()
            if len(text) > 2:
                del text[rng.randrange(len(text))]
                i, j = rng.randrange(len(text)), rng.randrange(len(text))
                text[i], text[j] = text[j], text[i]
            out.append(
                attrs.evolve(tool, name=f"{prefix}{copy}__{local}", description=" ".join(text))
            )
    return out


def common_queries(index: SearchIndex, tools: Sequence[Tool], *, names: bool) -> list[str]:
    """60 queries: the two the issue names, then two or three of the forty commonest words
    (each in hundreds or thousands of tools) of the tools' names, or of all their text
    (common English words left out, as a query leaves them out)."""
    if names:
        counts = Counter(
            term for tool in tools for term in set(query_terms(tool.name.partition("__")[2]))
        )
        by_tools = [term for term, _ in counts.most_common()]
    else:
        by_tools = sorted(index._postings, key=lambda term: -len(index._postings[term]))
    common = [t for t in by_tools if t.isalpha() and len(t) > 2 and t not in COMMON_WORDS][:40]
    rng = random.Random(11)
    queries = ["update record", "fetch operation 42"]
    while len(queries) < 60:
        queries.append(" ".join(rng.sample(common, rng.choice((2, 3)))))
    return queries


def latency(
    search: Callable[[str, int], object], queries: Sequence[str], runs: int
) -> dict[str, float]:
    """Per-search seconds of this process's CPU (which the other work of a loaded machine
    inflates less than wall time): the first search of each query (cold), then each query's
    median over ``runs`` more (warm); median, 95th percentile and worst over the queries."""
    cold = []
    for query in queries:
        start = time.process_time()
        search(query, 5)
        cold.append(time.process_time() - start)
    warm: list[list[float]] = [[] for _ in queries]
    for _ in range(runs):
        for i, query in enumerate(queries):
            start = time.process_time()
            search(query, 5)
            warm[i].append(time.process_time() - start)
    per_query = sorted(statistics.median(times) for times in warm)
    return {
        "cold p50": statistics.median(cold),
        "cold p95": _p95(cold),
        "p50": statistics.median(per_query),
        "p95": _p95(per_query),
        "max": per_query[-1],
    }


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="warm runs per query (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    read = catalog.read()
    tools = read.tools
    names = [tool.name for tool in tools]
    kept = set(names)
    sets = query_sets(kept | set(read.skipped))

    shipped = SearchIndex(tools)
    rankers: dict[str, Rank] = {
        "plain BM25 (baseline)": PlainBM25(tools).rank,
        "ours: no parameters": _bind(SearchIndex(tools, parameter_weight=0.0)),
        "ours: no other forms": _bind(SearchIndex(tools, prefix_factor=0.0, related_factor=0.0)),
        "ours: no summary field": _bind(SearchIndex(tools, summary_weight=0.0)),
        "ours: no keywords": _bind(SearchIndex(tools, keyword_weight=0.0)),
        "ours: no kinds": _bind(SearchIndex(tools, kind_weight=0.0)),
        "ours (shipped)": _bind(shipped),
    }
    with_embeddings = hybrid(tools)
    if with_embeddings is None:
        print("wordllama is not installed: no row for the hybrid\n")
    else:
        rankers["ours + WordLlama (hybrid)"] = with_embeddings
    quality: dict[str, dict[str, dict[str, float]]] = {}
    for label, rank in rankers.items():
        quality[label] = {}
        for set_name, queries in sets.items():
            quality[label][f"{set_name}, all"] = evaluate(rank, names, queries, kept)
            quality[label][f"{set_name}, kept"] = evaluate(
                rank, names, kept_only(queries, kept), kept
            )

    speed: dict[str, dict[str, float]] = {}
    heldout_texts = [str(q["query"]) for s in ("held-out dev", "held-out test") for q in sets[s]]
    for size in (len(tools), 10_000):
        subset = tools if size <= len(tools) else scaled(tools, size)
        start = time.process_time()
        index = SearchIndex(subset)
        build = time.process_time() - start
        searches: list[tuple[str, Callable[[str, int], object], float]] = [
            ("ours", index.rank, build),
            ("plain index", partial(plain_index, index), build),
        ]
        if with_embeddings is not None:
            start = time.process_time()
            fused = hybrid(subset)
            assert fused is not None
            searches.append(("hybrid", fused, time.process_time() - start))
        common = common_queries(index, subset, names=False)
        common_names = common_queries(index, subset, names=True)
        for label, texts in (
            ("common words", common),
            ("common name words", common_names),
            ("held-out", heldout_texts),
        ):
            for ranker, search, built in searches:
                speed[f"{size} tools, {label}, {ranker}"] = {
                    "build": built,
                    **latency(search, texts, args.runs),
                }
        # the trick must not change an answer
        for query in common + common_names + heldout_texts:
            if list(index.rank(query, 5).positions) != plain_index(index, query, 5)[0]:
                raise SystemExit(f"the search and the plain index differ on {query!r}")

    counts = {name: len(queries) for name, queries in sets.items()}
    if args.json:
        print(
            json.dumps(
                {"tools": len(tools), "queries": counts, "quality": quality, "speed": speed},
                indent=1,
            )
        )
        return
    print(
        f"catalog: {len(tools)} tools from {len(catalog.DOCUMENTS)} documents through the reader"
        f" ({len(read.skipped)} operations skipped); queries: {counts}\n"
    )
    for column in next(iter(quality.values())):
        print(f"{column}")
        base = quality["plain BM25 (baseline)"][column]["recall@5"]
        for label, by_set in quality.items():
            got = by_set[column]
            print(
                f"  {label:26} recall@1 {got['recall@1']:.3f}  recall@5 {got['recall@5']:.3f}"
                f"  MRR {got['MRR']:.3f}   recall@5 vs BM25 {100 * (got['recall@5'] - base):+.1f}"
                " points"
            )
    print("\nsearch latency, microseconds of CPU per search (limit 5); build: ms of CPU")
    print(
        f"{'':44} {'build ms':>9} {'cold p50':>9} {'cold p95':>9} {'p50':>8} {'p95':>8} {'max':>8}"
    )
    for label, times in speed.items():
        print(
            f"{label:44} {times['build'] * 1e3:9.1f} "
            + " ".join(
                f"{times[key] * 1e6:{9 if key.startswith('cold') else 8}.1f}"
                for key in ("cold p50", "cold p95", "p50", "p95", "max")
            )
        )


def _bind(index: SearchIndex) -> Rank:
    return lambda query, limit: index.rank(query, limit).positions


if __name__ == "__main__":
    main()
