"""Tool search on the held-out set's dev half only, with cross-validation: for tuning.

Run: ``.venv/bin/python -m bench.search_dev`` (the shipped ranker), or with a grid of
``SearchIndex`` arguments, each ``name=value,value,...``:
``.venv/bin/python -m bench.search_dev prefix_factor=0,0.25,0.5 related_factor=0.25,0.5``;
or with ``--hybrid`` (and ``--weights 0.3,0.5``), the example hybrid of the index and WordLlama
embeddings (``at.presentation.HybridRanker``) at each weight of the meaning, and the embedding
alone (weight 1).

It reads the ``dev`` half of ``search_eval/heldout.json`` and nothing of the test half, so it may
be run as often as wanted (``bench_search.py`` prints the test half: run it once, at the end).
The dev queries are cut in five folds by the SHA-256 of their text (salted, so not the cut
between dev and test). For each setting it prints recall@5, recall@1 and MRR (as
``bench_search.py`` counts them, over all queries), recall@5 per fold and per API; then the
cross-validated recall@5 of choosing among the settings: for each fold, the setting with the
best recall@5 on the four others (the first listed on a tie, the shipped ranker first), measured
on that fold. A choice whose gain holds in cross-validation and across folds and APIs is one
that may carry over to queries not seen; one that gains on dev alone fits dev.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
from collections.abc import Callable, Sequence

from amends_toolkit.presentations._index import SearchIndex
from bench.bench_search import _DEPTH, EVAL
from bench.search_eval import catalog

FOLDS = 5

Scores = list[tuple[float, float, float]]  # per query: recall@5, recall@1, reciprocal rank


def dev_queries() -> list[dict[str, object]]:
    """The dev half's queries, each with its fold; the test half is dropped as it is read."""
    queries = json.loads((EVAL / "heldout.json").read_text(encoding="utf-8"))["queries"]
    dev = [dict(entry) for entry in queries if entry["split"] == "dev"]
    for entry in dev:
        digest = hashlib.sha256(f"fold:{entry['query']}".encode()).hexdigest()
        entry["fold"] = int(digest, 16) % FOLDS
    return dev


def per_query(
    rank: Callable[[str, int], tuple[Sequence[int], int]],
    names: Sequence[str],
    queries: Sequence[dict[str, object]],
) -> Scores:
    out = []
    for entry in queries:
        right = set(entry["tools"])  # type: ignore[call-overload]
        ranked = [names[p] for p in rank(str(entry["query"]), _DEPTH)[0]]
        first = next((i for i, name in enumerate(ranked) if name in right), None)
        out.append(
            (
                len(set(ranked[:5]) & right) / min(len(right), 5),
                float(first == 0),
                0.0 if first is None else 1.0 / (first + 1),
            )
        )
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / max(len(values), 1)


def _recall(scores: Scores, queries: Sequence[dict[str, object]], keep: object) -> float:
    """Mean recall@5 of the queries whose fold (an int) or API (a str) is ``keep``."""
    key = "fold" if isinstance(keep, int) else "api"
    return _mean([s[0] for s, q in zip(scores, queries, strict=True) if q[key] == keep])


def cross_validated(settings: Sequence[Scores], queries: Sequence[dict[str, object]]) -> float:
    """Recall@5 of choosing a setting on four folds and measuring it on the fifth, per fold."""
    total = 0.0
    for fold in range(FOLDS):
        rest = [
            _mean([s[0] for s, q in zip(scores, queries, strict=True) if q["fold"] != fold])
            for scores in settings
        ]
        chosen = settings[rest.index(max(rest))]
        total += sum(s[0] for s, q in zip(chosen, queries, strict=True) if q["fold"] == fold)
    return total / len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid", nargs="*", help="SearchIndex arguments: name=value,value,...")
    parser.add_argument("--hybrid", action="store_true", help="the index and WordLlama, fused")
    parser.add_argument(
        "--weights",
        default="0.3,0.4,0.45,0.5,0.55,0.6",
        help="the meaning's weights, with --hybrid",
    )
    args = parser.parse_args()
    axes = [
        (name, [float(v) for v in values.split(",")])
        for name, _, values in (item.partition("=") for item in args.grid)
    ]
    tools = catalog.read().tools
    names = [tool.name for tool in tools]
    queries = dev_queries()
    settings: dict[str, Scores] = {"shipped": per_query(SearchIndex(tools).rank, names, queries)}
    for values in itertools.product(*(v for _, v in axes)) if axes else ():
        chosen = dict(zip((name for name, _ in axes), values, strict=True))
        label = " ".join(f"{name}={value:g}" for name, value in chosen.items())
        settings[label] = per_query(SearchIndex(tools, **chosen).rank, names, queries)
    if args.hybrid:
        from amends_toolkit.presentations._hybrid import HybridRanker, wordllama_embed

        embed = wordllama_embed()
        for weight in [float(w) for w in args.weights.split(",")]:
            ranker = HybridRanker(tools, embed, weight=weight)
            settings[f"hybrid weight={weight:g}"] = per_query(ranker.rank, names, queries)
        alone = HybridRanker(tools, embed, weight=1.0)
        embedding = per_query(alone.rank, names, queries)
    apis = sorted({str(q["api"]) for q in queries})
    print(f"dev: {len(queries)} queries in {FOLDS} folds; recall@5 per fold, then per API")
    for label, scores in settings.items():
        folds = " ".join(f"{_recall(scores, queries, fold):.3f}" for fold in range(FOLDS))
        print(
            f"{label:40} recall@5 {_mean([s[0] for s in scores]):.3f}"
            f"  recall@1 {_mean([s[1] for s in scores]):.3f}"
            f"  MRR {_mean([s[2] for s in scores]):.3f}  folds {folds}"
        )
        print(" " * 4 + " ".join(f"{api}={_recall(scores, queries, api):.3f}" for api in apis))
    if len(settings) > 1:
        print(
            f"cross-validated recall@5 of choosing among them: "
            f"{cross_validated(list(settings.values()), queries):.3f}"
        )
    if args.hybrid:
        print(
            f"{'the embedding alone':40} recall@5 {_mean([s[0] for s in embedding]):.3f}"
            f"  recall@1 {_mean([s[1] for s in embedding]):.3f}"
            f"  MRR {_mean([s[2] for s in embedding]):.3f}"
        )


if __name__ == "__main__":
    main()
