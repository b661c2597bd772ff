"""The word index behind ``tool_search``: BM25F over the words of tools' names and descriptions.

A plain, deterministic match on words, with no model and no network. Built once per presented
toolkit; a search touches only the postings of the query's words (an inverted index), never
every tool.

How a query is read and scored:

- Words: a name or a text is cut at anything that is not a letter or a digit, and between the
  words of ``camelCase`` and ``HTTPResponse``, so ``create_issue``, ``create-issue`` and
  ``createIssue`` read as the same two words. Words are lowercased and lightly stemmed
  (``playlists``, ``creating`` and ``created`` read as ``playlist`` and ``create``).
- Score: BM25F, with a tool's name counting :data:`NAME_WEIGHT` times a word of its description,
  so a rare word weighs more than a common one and a long description does not win by length.
- A query word also scores, at :data:`PREFIX_FACTOR` of its weight, for the words it begins
  (``repo`` for ``repository``), and at :data:`RELATED_FACTOR` for the few verbs of
  :data:`RELATED` that name the same action (``remove`` for ``delete``), unless the query
  holds one of those verbs too (``create a new playlist`` counts one action once).
- Common English words (``the``, ``in``) are left out of a query that has other words.
- A tool that scores nothing does not match. Ties keep catalog order. A query with no words lists
  the tools in catalog order, all of them matching.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections.abc import Iterable, Mapping
from itertools import compress, filterfalse, repeat
from operator import add, ge, neg

import attrs

__all__ = (
    "COMMON_WORDS",
    "NAME_WEIGHT",
    "PREFIX_FACTOR",
    "RELATED",
    "RELATED_FACTOR",
    "Hits",
    "SearchIndex",
    "query_terms",
    "stem",
    "words",
)

NAME_WEIGHT = 3.0
"""How much more a word of a tool's name counts than a word of its description."""
PREFIX_FACTOR = 0.5
"""What a query word scores, relative to the word itself, for a longer word it begins."""
RELATED_FACTOR = 0.5
"""What a query word scores, relative to the word itself, for a verb of the same action."""
_K1 = 1.2
_B_NAME = 0.3
_B_DESCRIPTION = 0.75
_MIN_PREFIX = 3
_CACHE_SIZE = 2048
# Scores are sums of floats in one order per query; the margin keeps a tie from being pruned.
_MARGIN = 1.0 + 1e-9

RELATED: tuple[frozenset[str], ...] = tuple(
    frozenset(group)
    for group in (
        ("delete", "remove", "erase", "destroy", "drop"),
        ("create", "add", "new", "make", "insert"),
        ("update", "modify", "edit", "change", "set"),
        ("get", "retrieve", "fetch", "read", "show", "view", "lookup", "find"),
        ("list", "enumerate", "browse"),
        ("search", "find", "query", "lookup"),
        ("send", "deliver"),
        ("cancel", "abort", "stop", "terminate"),
        ("start", "begin", "launch", "run", "trigger"),
        ("upload", "import"),
        ("download", "export"),
    )
)
"""Verbs that name the same action on a tool: a deterministic table, not a model of meaning."""

COMMON_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "some",
        "that",
        "the",
        "their",
        "them",
        "these",
        "this",
        "those",
        "to",
        "us",
        "want",
        "was",
        "we",
        "what",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
"""Words left out of a query that has others: they say nothing of what a tool does."""
_CHUNK = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")
_DOUBLE = re.compile(r"([b-df-hj-knp-rtv-y])\1$")


def words(text: str) -> list[str]:
    """The words of a name or a text, lowercased, in order, before stemming."""
    return [
        word.lower() for chunk in _CHUNK.findall(text) for word in _CAMEL.findall(chunk) if word
    ]


def stem(word: str) -> str:
    """A light English stem: plurals, ``-ing``, ``-ed`` and a final ``e`` taken off.

    Deliberately conservative (it never merges ``user`` with ``use``): a stem only has to make
    the forms of one word meet, so ``create``, ``creates``, ``created`` and ``creating`` give
    one stem.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses") or word.endswith(("ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) >= 6:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) >= 5:
        word = _undouble(word[:-2])
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    return word[:-1] if _DOUBLE.search(word) else word


@attrs.frozen(kw_only=True)
class Hits:
    """What a search found: catalog positions, best first, and how many tools matched."""

    positions: tuple[int, ...]
    matched: int


_Postings = Mapping[int, float]


class SearchIndex:
    """An inverted index over ``(name, description)`` pairs, in catalog order.

    Build it once; :meth:`search` is then cheap and never scans every tool. Safe to share
    between tasks and threads: its only changing state is a bounded cache of the postings of
    query words, whose worst race computes an entry twice.
    """

    def __init__(
        self,
        tools: Iterable[tuple[str, str]],
        *,
        name_weight: float = NAME_WEIGHT,
        prefix_factor: float = PREFIX_FACTOR,
        related_factor: float = RELATED_FACTOR,
    ) -> None:
        self._prefix_factor = prefix_factor
        self._related_factor = related_factor
        fields: list[tuple[list[str], list[str]]] = [
            ([stem(w) for w in words(name)], [stem(w) for w in words(description)])
            for name, description in tools
        ]
        self._size = len(fields)
        count = max(self._size, 1)
        average_name = sum(len(name) for name, _ in fields) / count or 1.0
        average_description = sum(len(text) for _, text in fields) / count or 1.0
        # term -> doc -> field-weighted term frequency, before idf and saturation (BM25F)
        weighted: dict[str, dict[int, float]] = {}
        for doc, (name, description) in enumerate(fields):
            name_norm = 1 - _B_NAME + _B_NAME * len(name) / average_name
            description_norm = (
                1 - _B_DESCRIPTION + _B_DESCRIPTION * len(description) / average_description
            )
            for term in name:
                row = weighted.setdefault(term, {})
                row[doc] = row.get(doc, 0.0) + name_weight / name_norm
            for term in description:
                row = weighted.setdefault(term, {})
                row[doc] = row.get(doc, 0.0) + 1.0 / description_norm
        self._postings: dict[str, dict[int, float]] = {}
        for term, row in weighted.items():
            idf = math.log(1 + (self._size - len(row) + 0.5) / (len(row) + 0.5))
            self._postings[term] = {
                doc: idf * tf * (_K1 + 1) / (tf + _K1) for doc, tf in row.items()
            }
        self._vocabulary = sorted(self._postings)
        self._related: dict[str, set[str]] = {}
        for group in RELATED:
            stems = {stem(word) for word in group}
            for member in stems:
                self._related.setdefault(member, set()).update(stems - {member})
        self._expanded: dict[tuple[str, bool], _Term] = {}

    def __len__(self) -> int:
        return self._size

    def search(self, query: str, limit: int) -> Hits:
        """The best ``limit`` tools for ``query`` and how many match at all.

        Raises:
            ValueError: ``limit`` is below one.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        terms = query_terms(query)
        if not terms:
            return Hits(positions=tuple(range(min(limit, self._size))), matched=self._size)
        # A word whose related verbs the query already holds is read as itself only, so that
        # "create a new playlist" does not count the one action twice.
        asked = set(terms)
        rows = [
            self._expand(term, related=asked.isdisjoint(self._related.get(term, ())))
            for term in terms
        ]
        rows.sort(key=_length)
        union = 0
        for row in rows:
            union |= row.mask
        matched = union.bit_count()
        if len(rows) == 1:
            return Hits(positions=tuple(rows[0].ranked_docs[:limit]), matched=matched)
        # Rarest word first, with bounds (MaxScore): once ``limit`` tools have scores, a tool
        # that the words so far did not score can only make the cut if what it gets from this
        # word, with all the later words can add, reaches the limit-th best score so far. A
        # word's tools are read best first, so the walk stops at the first that cannot; and a
        # tool already scored that cannot reach the cut either is dropped. A query so pays for
        # its rare words, and for only the head of a word most tools have.
        left = [0.0] * (len(rows) + 1)
        for i in range(len(rows) - 1, -1, -1):
            left[i] = left[i + 1] + rows[i].best
        # Every pass below is C-level iteration (map, zip, filterfalse, dict.update), never a
        # Python loop over postings.
        scores: dict[int, float] = {}
        for i, row in enumerate(rows):
            postings = row.scores
            docs = row.docs
            # Finding the cut costs a pass over the scores so far: only worth it for a word with
            # more tools than that.
            cut = 0.0
            if limit <= len(scores) < len(docs):
                cut = _cut(scores, limit) / _MARGIN
            bound = cut - left[i + 1]
            if bound <= row.lowest:
                # every tool of this word may still make the cut: add them all
                scores.update(
                    zip(docs, map(add, map(scores.get, docs, repeat(0.0)), row.values), strict=True)
                )
                continue
            known = list(scores)
            gains = list(map(add, scores.values(), map(postings.get, known, repeat(0.0))))
            scores.update(zip(known, gains, strict=True))
            # The tools this word scores and no earlier word did, best first, down to the bound.
            head = row.ranked_docs[: bisect.bisect_right(row.ranked_negated, -bound)]
            fresh = list(filterfalse(scores.__contains__, head))
            scores.update(zip(fresh, map(postings.__getitem__, fresh), strict=True))
        return Hits(positions=tuple(doc for _, doc in _top(scores, limit)), matched=matched)

    def _expand(self, term: str, *, related: bool) -> _Term:
        """The postings of a query word: the word, the words it begins, its related verbs."""
        cached = self._expanded.get((term, related))
        if cached is not None:
            return cached
        exact = self._postings.get(term, {})
        others: list[tuple[float, _Postings]] = []
        if related and self._related_factor > 0:
            others.extend(
                (self._related_factor, self._postings[other])
                for other in sorted(self._related.get(term, ()))
                if other in self._postings
            )
        if len(term) >= _MIN_PREFIX and self._prefix_factor > 0:
            start = bisect.bisect_right(self._vocabulary, term)
            for other in self._vocabulary[start:]:
                if not other.startswith(term):
                    break
                others.append((self._prefix_factor, self._postings[other]))
        expanded: _Postings = exact
        if others:
            merged = dict(exact)
            for factor, row in others:
                for doc, score in row.items():
                    # A tool counts a query word once, by its best form, so that a word with many
                    # derived forms in one description does not outweigh the word itself.
                    weighted = factor * score
                    if weighted > merged.get(doc, 0.0):
                        merged[doc] = weighted
            expanded = merged
        if len(self._expanded) >= _CACHE_SIZE:
            self._expanded.clear()
        term_postings = _Term(expanded, self._size)
        self._expanded[term, related] = term_postings
        return term_postings


class _Term:
    """A query word's postings, as a mapping and as arrays the search reads at C speed; and,
    built when first needed, the same ranked best first."""

    __slots__ = ("_ranked", "best", "docs", "lowest", "mask", "scores", "values")

    def __init__(self, scores: _Postings, size: int) -> None:
        self.scores = scores
        self.docs = tuple(scores)
        # The tools as the bits of one int: the union of a query's words is an OR, and how many
        # tools match is its bit count, in C over a few hundred machine words.
        bits = bytearray((size + 7) // 8)
        for doc in self.docs:
            bits[doc >> 3] |= 1 << (doc & 7)
        self.mask = int.from_bytes(bits, "little")
        self.values = tuple(scores.values())
        self.best = max(self.values, default=0.0)
        self.lowest = min(self.values, default=0.0)
        self._ranked: tuple[list[int], list[float]] | None = None

    def _rank(self) -> tuple[list[int], list[float]]:
        if self._ranked is None:
            pairs = sorted(zip(map(neg, self.values), self.docs, strict=True))
            self._ranked = ([doc for _, doc in pairs], [score for score, _ in pairs])
        return self._ranked

    @property
    def ranked_docs(self) -> list[int]:
        """Positions best first, ties in catalog order."""
        return self._rank()[0]

    @property
    def ranked_negated(self) -> list[float]:
        """The negated scores of :attr:`ranked_docs`, ascending (for :mod:`bisect`)."""
        return self._rank()[1]


def _length(term: _Term) -> int:
    return len(term.scores)


def _cut(scores: dict[int, float], limit: int) -> float:
    """The ``limit``-th best score (one pass, no sort)."""
    return heapq.nlargest(limit, scores.values())[-1]


def _top(scores: dict[int, float], limit: int) -> list[tuple[float, int]]:
    """The best ``limit`` of ``scores`` as ``(-score, position)``, ties in catalog order."""
    if len(scores) > 4 * limit:
        # One pass finds the cut, a C-level one keeps the tools at or above it (ties included,
        # so catalog order can break them); only those few are sorted.
        cut = _cut(scores, limit)
        best = list(compress(scores, map(ge, scores.values(), repeat(cut))))
        return sorted(zip(map(neg, map(scores.__getitem__, best)), best, strict=True))[:limit]
    return sorted((-score, doc) for doc, score in scores.items())[:limit]


def query_terms(query: str) -> list[str]:
    """The stemmed words a query scores with, each once, common English words left out unless
    the query has nothing else."""
    raw = words(query)
    kept = [word for word in raw if word not in COMMON_WORDS] or raw
    return list(dict.fromkeys(stem(word) for word in kept))
