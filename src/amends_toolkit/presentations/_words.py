"""The words of tool search: how a name, a text or a query is cut into words (:func:`words`),
stemmed (:func:`stem`), which English words a query leaves out (:data:`COMMON_WORDS`), which
verbs name one action (:data:`RELATED`) or ask for a kind of tool (:data:`INTENTS`), and the
terms a query scores with (:func:`query_terms`). The index
(:mod:`amends_toolkit.presentations._index`) says how they rank.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = (
    "COMMON_WORDS",
    "INTENTS",
    "RELATED",
    "Stems",
    "query_terms",
    "stem",
    "words",
)

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

INTENTS: Mapping[str, str] = {
    word: kind
    for kind, group in (
        (
            "read",
            "get retrieve fetch read show view see look lookup find search query list enumerate"
            " browse check download export what who which where when",
        ),
        ("delete", "delete remove erase destroy drop"),
        (
            "create",
            "create add new make insert send deliver post upload import register submit invite"
            " publish write generate start begin launch run trigger",
        ),
    )
    for word in group.split()
}
"""Query words that ask for a kind of tool (:func:`tool_kind`): one that reads, one that
deletes, one that makes something new. A word is read by its stem (``sending`` as ``send``)."""

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
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")
_DOUBLE = re.compile(r"([b-df-hj-knp-rtv-y])\1$")


def words(text: str) -> list[str]:
    """The words of a name or a text, lowercased, in order, before stemming."""
    # The camelCase pattern matches letters and digits only, so it never crosses a separator.
    return list(map(str.lower, _CAMEL.findall(text)))


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


class Stems:
    """Words to stems, each word stemmed once per index built (a catalog repeats its words)."""

    def __init__(self) -> None:
        self._known: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        known = self._known
        return [known[w] if w in known else known.setdefault(w, stem(w)) for w in words(text)]


def query_terms(query: str) -> list[str]:
    """The stemmed words a query scores with, each once, common English words left out unless
    the query has nothing else."""
    raw = words(query)
    kept = [word for word in raw if word not in COMMON_WORDS] or raw
    return list(dict.fromkeys(stem(word) for word in kept))
