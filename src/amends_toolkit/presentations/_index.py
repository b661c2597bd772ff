"""The word index behind ``tool_search``: BM25F over the words of tools' names, descriptions,
parameters and keywords, and what their annotations say they do.

A plain, deterministic match on words, with no model and no network. Built once per presented
toolkit; a search reads only the postings of the query's words (an inverted index), never every
tool's text.

How a tool is read:

- Words: a name or a text is cut at anything that is not a letter or a digit, and between the
  words of ``camelCase`` and ``HTTPResponse``, so ``create_issue``, ``create-issue`` and
  ``createIssue`` read as the same two words. Words are lowercased and lightly stemmed
  (``playlists``, ``creating`` and ``created`` read as ``playlist`` and ``create``).
- Five fields: the name; the description; its first paragraph again when it has several (an
  OpenAPI operation's summary before its description: what the tool does, where the rest says
  how); the parameters: each top-level property of the input schema by its name, title and
  description, the name of the schema it refers to (``MessageCreateRequest``) and the names of
  that object's own properties; and the keywords its source gave, never shown to the model (an
  OpenAPI operation's path and tags: ``/channels/{channel_id}/messages``, ``Playlists``). The
  last two at most :data:`MAX_PARAMETER_WORDS` words each.
- Score: BM25F, where a word of the name counts :data:`NAME_WEIGHT` times a word of the
  description, one of its first paragraph :data:`SUMMARY_WEIGHT` more, one of the parameters
  :data:`PARAMETER_WEIGHT` times and one of the keywords :data:`KEYWORD_WEIGHT` times, each
  field's length normalized apart, so a rare word weighs more than a common one and neither a
  long description nor a long schema wins by its length (a word of the parameters or the
  keywords counts once, however many times they say it).
- Kind: what the tool's annotations say it does: it only reads (``read_only``), it deletes
  (``destructive``), or it makes something new (``idempotent`` false, as the OpenAPI reader says
  of ``POST``). The kind is one more field of the tool, a word of weight :data:`KIND_WEIGHT`
  that no query word is, which only the query's :data:`INTENTS` find.

How a query is read:

- Common English words (``the``, ``in``) are left out of a query that has other words.
- A word of :data:`INTENTS` (``show``, ``who``; ``remove``; ``send``, ``upload``) also asks for
  the tools of a kind, which then score as for one more word, a common one (a kind covers many
  tools), so that among the tools the other words find, those that do what is asked come first:
  ``send a message`` favours the tool that makes messages (a ``POST``) over the ones that read
  them. A kind alone makes no tool match.
- A query word also scores, at :data:`PREFIX_FACTOR` of its weight, for the words it begins
  when it is no word of the catalog itself (``repo`` for ``repository``, but ``star`` never for
  ``start``), and never for a shorter word (``report`` never for ``repo``, ``healthy`` never
  for ``health``): so a partial match of a word is only ever made where no tool holds the word
  itself, and never outranks an exact one, however rare the word it finds; and at
  :data:`RELATED_FACTOR` for the few verbs of :data:`RELATED` that name the same action
  (``remove`` for ``delete``), unless the query holds one of those verbs too (``create a new
  playlist`` counts one action once). A tool counts each query word once, by its best form.
- A tool that scores nothing does not match. Ties keep catalog order. A query with no words
  lists the tools in catalog order, all of them matching.

A search scores only the tools its words find (their postings), each word's scores added in
query order; the ``limit`` best are then taken with a heap. Its work is linear in the query's
words and the tools they find.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections import Counter
from itertools import repeat
from operator import add, neg
from typing import TYPE_CHECKING, NamedTuple, Protocol

from amends_toolkit.presentations._words import INTENTS, RELATED, Stems, query_terms, stem, words

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from amends_toolkit._definitions import Annotations
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.runtime import Tool

__all__ = (
    "KEYWORD_WEIGHT",
    "KIND_WEIGHT",
    "MAX_PARAMETER_WORDS",
    "NAME_WEIGHT",
    "PARAMETER_WEIGHT",
    "PREFIX_FACTOR",
    "RELATED_FACTOR",
    "SUMMARY_WEIGHT",
    "Hits",
    "SearchIndex",
    "ToolRanker",
    "parameter_text",
    "summary",
    "tool_kind",
)

NAME_WEIGHT = 3.0
"""How much more a word of a tool's name counts than a word of its description."""
PARAMETER_WEIGHT = 0.5
"""How much a word of a tool's parameters counts, against a word of its description."""
SUMMARY_WEIGHT = 1.0
"""How much more a word of a description's first paragraph counts, when it has several."""
KEYWORD_WEIGHT = 1.0
"""How much a word of a tool's keywords counts, against a word of its description."""
KIND_WEIGHT = 0.5
"""How much a tool's kind counts, against a word of its description, for a query that asks for
it."""
MAX_PARAMETER_WORDS = 300
"""The most words a tool's parameters give the index (the first ones, in schema order), and its
keywords."""
PREFIX_FACTOR = 0.5
"""What a query word scores, relative to the word itself, for a longer word it begins when it
is no word of the catalog."""
RELATED_FACTOR = 0.5
"""What a query word scores, relative to the word itself, for a verb of the same action."""
_K1 = 1.2
_B_NAME = 0.3
_B_TEXT = 0.75
_MIN_PREFIX = 3
_CHARACTERS_PER_WORD = 16
# At most about so many bytes in the cache of query words' postings, and what a tool's score
# costs there (a dict's entry and a float, measured with tracemalloc: about 45).
_CACHE_BYTES = 16 * 2**20
_POSTING_BYTES = 64


class Hits(NamedTuple):
    """What a search found: catalog positions, best first, and how many tools matched."""

    positions: tuple[int, ...]
    matched: int


class ToolRanker(Protocol):
    """What ``tool_search`` ranks with: the tools of a toolkit, by their positions in its
    catalog order (``list(toolkit.tools.values())``), best first for a query.

    :class:`SearchIndex` is one; a host may bring its own (embeddings, a hybrid) built over the
    same tools in the same order.
    """

    def rank(self, query: str, limit: int) -> tuple[Sequence[int], int]:
        """The positions of the best tools for ``query`` (at most ``limit``, best first), and
        how many tools match it at all."""
        ...


class SearchIndex:
    """An inverted index over tools, in catalog order: the built-in :class:`ToolRanker`.

    Build it once; :meth:`rank` is then cheap, never reads every tool's text, and its work is
    linear in the query, whatever the query holds. Safe to share between tasks and threads: its
    only changing state is a cache of the postings of query words (about 16 MiB at most), whose
    worst race computes an entry twice or miscounts its bytes.

    Raises:
        ValueError: ``prefix_factor`` or ``related_factor`` is not from 0 to 1.
    """

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        name_weight: float = NAME_WEIGHT,
        parameter_weight: float = PARAMETER_WEIGHT,
        summary_weight: float = SUMMARY_WEIGHT,
        keyword_weight: float = KEYWORD_WEIGHT,
        kind_weight: float = KIND_WEIGHT,
        prefix_factor: float = PREFIX_FACTOR,
        related_factor: float = RELATED_FACTOR,
    ) -> None:
        # A form scoring more than the word itself would outrank it.
        for option, factor in (
            ("prefix_factor", prefix_factor),
            ("related_factor", related_factor),
        ):
            if not 0.0 <= factor <= 1.0:
                raise ValueError(f"{option} must be from 0 to 1, not {factor!r}")
        self._prefix_factor = prefix_factor
        self._related_factor = related_factor
        stems_of = Stems()
        # (weight, length normalization, words, whether a word counts once however often it
        # appears): a schema says a word as often as it has fields that hold it, which says
        # nothing more of what the tool does. A kind is a word of its own field, ``~read``,
        # that no query word can be (words are letters and digits).
        fields = [
            (
                (name_weight, _B_NAME, stems_of(tool.name), False),
                (1.0, _B_TEXT, stems_of(tool.description), False),
                (summary_weight, _B_TEXT, stems_of(summary(tool.description)), False),
                (parameter_weight, _B_TEXT, stems_of(parameter_text(tool.input_schema)), True),
                (keyword_weight, _B_TEXT, stems_of(_bounded(tool.keywords)), True),
                (kind_weight, 0.0, [f"~{kind}" for kind in tool_kind(tool.annotations)], True),
            )
            for tool in tools
        ]
        self._size = len(fields)
        count = max(self._size, 1)
        # each field's average length, over the tools (a column of ``fields``)
        averages = [
            sum(len(field[2]) for field in column) / count or 1.0
            for column in zip(*fields, strict=True)
        ]
        # term -> tool -> field-weighted term frequency, before idf and saturation (BM25F)
        weighted: dict[str, dict[int, float]] = {}
        for doc, doc_fields in enumerate(fields):
            for (weight, b, terms, once), average in zip(doc_fields, averages, strict=True):
                if not weight or not terms:
                    continue
                gain = weight / (1 - b + b * len(terms) / average)
                for term, times in Counter(terms).items():
                    row = weighted.setdefault(term, {})
                    row[doc] = row.get(doc, 0.0) + gain * (1 if once else times)
        self._postings: dict[str, dict[int, float]] = {}
        for term, row in weighted.items():
            idf = math.log(1 + (self._size - len(row) + 0.5) / (len(row) + 0.5))
            self._postings[term] = {
                doc: idf * tf * (_K1 + 1) / (tf + _K1) for doc, tf in row.items()
            }
        self._kinds = {
            kind: _Term(self._postings.pop(f"~{kind}"), finds=False)
            for kind in dict.fromkeys(INTENTS.values())
            if f"~{kind}" in self._postings
        }
        self._vocabulary = sorted(self._postings)
        self._related: dict[str, set[str]] = {}
        for group in RELATED:
            stems = {stem(word) for word in group}
            for member in stems:
                self._related.setdefault(member, set()).update(stems - {member})
        self._expanded: dict[tuple[str, bool], _Term] = {}
        self._cached = 0  # about how many bytes the cache holds (see _Term.nbytes)
        self._intents = {stem(word): kind for word, kind in INTENTS.items()}

    def __len__(self) -> int:
        return self._size

    def rank(self, query: str, limit: int) -> Hits:
        """The best ``limit`` tools for ``query`` and how many match at all.

        Raises:
            ValueError: ``limit`` is below one.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        rows = self.terms(query)
        if not rows:
            return Hits(positions=tuple(range(min(limit, self._size))), matched=self._size)
        matching: set[int] = set()
        for row in rows:
            if row.finds:
                matching.update(row.scores)
        best = heapq.nsmallest(limit, _scored(rows, list(matching)))
        return Hits(positions=tuple(doc for _, doc in best), matched=len(matching))

    def terms(self, query: str) -> list[_Term]:
        """The postings of each word of ``query``, with the other forms it scores for, then
        those of the kinds it asks for (which make no tool match: ``finds`` is false)."""
        terms = query_terms(query)
        if not terms:
            return []
        # A word whose related verbs the query already holds is read as itself only, so that
        # "create a new playlist" does not count the one action twice.
        asked = set(terms)
        rows = [
            self._expand(term, related=asked.isdisjoint(self._related.get(term, ())))
            for term in terms
        ]
        kinds = dict.fromkeys(
            kind for word in words(query) if (kind := self._intents.get(stem(word))) is not None
        )
        rows.extend(self._kinds[kind] for kind in kinds if kind in self._kinds)
        return rows

    def _expand(self, term: str, *, related: bool) -> _Term:
        cached = self._expanded.get((term, related))
        if cached is not None:
            return cached
        exact = self._postings.get(term, {})
        others: list[tuple[float, Mapping[int, float]]] = []
        if related and self._related_factor > 0:
            others.extend(
                (self._related_factor, self._postings[other])
                for other in sorted(self._related.get(term, ()))
                if other in self._postings
            )
        if self._prefix_factor > 0:
            others.extend((self._prefix_factor, self._postings[form]) for form in self._forms(term))
        merged = dict(exact)
        for factor, row in others:
            for doc, score in row.items():
                # A tool counts a query word once, by its best form, so that a word with many
                # derived forms in one description does not outweigh the word itself.
                weighted = factor * score
                if weighted > merged.get(doc, 0.0):
                    merged[doc] = weighted
        expanded = _Term(merged)
        if self._cached + expanded.nbytes >= _CACHE_BYTES:
            self._expanded.clear()
            self._cached = 0
        self._expanded[term, related] = expanded
        self._cached += expanded.nbytes
        return expanded

    def _forms(self, term: str) -> list[str]:
        """The longer words of the catalog that ``term`` begins, when it is none itself: the
        tools a partial match finds are then never ones an exact match finds (issue 32)."""
        forms: list[str] = []
        if len(term) >= _MIN_PREFIX and term not in self._postings:
            start = bisect_right(self._vocabulary, term)
            for other in self._vocabulary[start:]:
                if not other.startswith(term):
                    break
                forms.append(other)
        return forms


class _Term:
    """A query word's postings: its score for each tool that has it (or one of its forms)."""

    __slots__ = ("finds", "nbytes", "scores")

    def __init__(self, scores: dict[int, float], *, finds: bool = True) -> None:
        self.scores = scores
        self.finds = finds
        self.nbytes = _POSTING_BYTES * len(scores) + 512
        """About how many bytes it holds, a little more."""


def _scored(rows: list[_Term], docs: list[int]) -> Iterator[tuple[float, int]]:
    """``(-score, position)`` of each tool, scored by every word in query order (in C-level
    passes over the tools)."""
    scores = [0.0] * len(docs)
    for row in rows:
        scores = list(map(add, scores, map(row.scores.get, docs, repeat(0.0))))
    return zip(map(neg, scores), docs, strict=True)


def summary(description: str) -> str:
    """A description's first paragraph when it has several (an OpenAPI operation's summary
    before its description), else nothing: the words that say what the tool does, where the
    others say how."""
    first, blank, _ = description.strip().partition("\n\n")
    return first if blank else ""


def tool_kind(annotations: Annotations) -> tuple[str, ...]:
    """What a tool's annotations say it does, as the kinds :data:`INTENTS` ask for: ``read``
    (read-only), ``delete`` (destructive) or ``create`` (not idempotent); none when they do not
    say."""
    if annotations.read_only:
        return ("read",)
    if annotations.destructive:
        return ("delete",)
    if annotations.idempotent is False:
        return ("create",)
    return ()


def parameter_text(schema: JsonObject) -> str:
    """The text a tool's parameters give the index: each top-level property's name, title and
    description, the name of the schema it refers to, and that object's own property names;
    at most :data:`MAX_PARAMETER_WORDS` words."""
    properties = schema.get("properties")
    defs = schema.get("$defs")
    parts: list[str] = []
    for name, value in properties.items() if isinstance(properties, dict) else ():
        parts.append(name)
        if isinstance(value, dict):
            parts.extend(
                text for key in ("title", "description") if isinstance(text := value.get(key), str)
            )
            target: JsonValue = value
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs, dict):
                parts.append(ref.removeprefix("#/$defs/"))
                target = defs.get(ref.removeprefix("#/$defs/"))
            inner = target.get("properties") if isinstance(target, dict) else None
            if isinstance(inner, dict):
                parts.extend(inner)
        if len(parts) > MAX_PARAMETER_WORDS:
            break
    return _bounded(parts)


def _bounded(parts: Sequence[str]) -> str:
    """At most :data:`MAX_PARAMETER_WORDS` words of ``parts``, the first ones."""
    # Bounded before it is cut in words: a schema's descriptions may be long.
    text = " ".join(parts[:MAX_PARAMETER_WORDS])[: _CHARACTERS_PER_WORD * MAX_PARAMETER_WORDS]
    return " ".join(words(text)[:MAX_PARAMETER_WORDS])
