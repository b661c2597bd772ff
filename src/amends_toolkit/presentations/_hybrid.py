"""Tool search by words and by meaning: the built-in index fused with a text embedding.

:class:`HybridRanker` is a :class:`~amends_toolkit.ToolRanker` for ``at.tool_search(toolkit,
ranker=...)``. The built-in index matches words; an embedding also finds a tool whose words the
query lacks ("musician" for *artist*). Each tool is embedded once, when the ranker is built; a
search embeds its query and scores every tool by

    (1 - weight) * words + weight * meaning

where ``words`` is the built-in index's score over the best of this query's (1 for the best,
0 for a tool its words do not find) and ``meaning`` the cosine of the query's and the tool's
vectors, scaled so the least similar tool has 0 and the most similar 1. A convex combination
of scores gained most on the development half of ``bench/search_eval/heldout.json`` among the
fusions tried (``bench/search_eval/README.md``): reciprocal rank fusion and re-ranking the index's
best by the embedding lost recall there.

``HybridRanker(tools, embed)`` takes any function from texts to vectors (one row per text);
``HybridRanker.with_wordllama(tools)`` uses WordLlama (MIT licence), whose static token
embeddings ship inside its wheel: no download, no GPU, and the same vectors on every run. Both
need the ``embeddings`` extra (numpy, and wordllama for the second):
``pip install -e './amends-toolkit[embeddings]'``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from amends_toolkit._extras import missing_extra
from amends_toolkit.presentations._index import SearchIndex, summary
from amends_toolkit.presentations._words import words
from amends_toolkit.runtime._toolkit import SEPARATOR

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from amends_toolkit.runtime import Tool

__all__ = ("WEIGHT", "HybridRanker", "tool_text", "wordllama_embed")

WEIGHT = 0.5
"""How much the meaning counts against the words (0: the built-in index alone; 1: the
embedding alone); chosen by cross-validation on the development half."""

_MAX_TEXT = 2_000
"""The most characters of a tool's text that are embedded: a model's encoder holds a whole
text at once, and a description may be as long as its source likes."""


def tool_text(tool: Tool) -> str:
    """What is embedded of a tool: the words of its name (the source's prefix left out: it names
    the API, not what the tool does) and its description's first paragraph when it has several
    (an OpenAPI summary: what the tool does, where the rest says how), else the description."""
    local = tool.name.partition(SEPARATOR)[2] or tool.name
    text = summary(tool.description) or tool.description
    return f"{' '.join(words(local))}. {text}"[:_MAX_TEXT]


class HybridRanker:
    """A :class:`~amends_toolkit.presentations._index.ToolRanker`: the built-in index's scores
    and an embedding's similarities, combined.

    Build it over the toolkit's tools in order (``list(toolkit.tools.values())``). Safe to call
    from several threads at once when ``embed`` is: it changes nothing after it is built.
    """

    def __init__(
        self,
        tools: Sequence[Tool],
        embed: Callable[[list[str]], ArrayLike],
        *,
        weight: float = WEIGHT,
    ) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be from 0 to 1, not {weight!r}")
        try:
            import numpy as np
        except ModuleNotFoundError as error:
            raise _missing(error) from None
        self._index = SearchIndex(tools)
        self._embed = embed
        self._weight = weight
        texts = [tool_text(tool) for tool in tools]
        self._vectors = _unit(np.asarray(embed(texts), np.float32)) if texts else None

    @classmethod
    def with_wordllama(cls, tools: Sequence[Tool], *, weight: float = WEIGHT) -> HybridRanker:
        """The ranker over WordLlama's embeddings (see :func:`wordllama_embed`)."""
        return cls(tools, wordllama_embed(), weight=weight)

    def rank(self, query: str, limit: int) -> tuple[list[int], int]:
        """The best ``limit`` tools for ``query``, and how many match: those its words find,
        and those the meaning brought into the answer. A tool that scores nothing does not
        match; a query with no words lists the tools in order, as the built-in index does.
        Ties keep catalog order.

        Raises:
            ValueError: ``limit`` is below one.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        import numpy as np  # there since the ranker was built

        rows = self._index.terms(query)
        if not rows or self._vectors is None:
            positions, matched = self._index.rank(query, limit)
            return list(positions), matched
        size = len(self._index)
        lexical = np.zeros(size)
        kinds = np.zeros(size)
        for row in rows:
            # a kind the query asks for scores only the tools its words found
            into = lexical if row.finds else kinds
            count = len(row.scores)
            into[np.fromiter(row.scores, np.intp, count)] += np.fromiter(
                row.scores.values(), np.float64, count
            )
        found = lexical > 0
        lexical += np.where(found, kinds, 0.0)
        combined = (1 - self._weight) * lexical / (lexical.max() or 1.0)
        asked = _unit(np.asarray(self._embed([query]), np.float32))[0]
        # vecdot, not a BLAS product: BLAS's threads fight over a loaded machine's cores
        # (ten times slower here), and a search already runs in a thread of its own
        similarity = np.vecdot(self._vectors, asked)
        low, high = float(similarity.min()), float(similarity.max())
        if high > low:
            combined += self._weight * (similarity - low) / (high - low)
        best = _best(combined, limit)
        best = best[combined[best] > 0]  # a tool that scores nothing does not match
        return [int(p) for p in best], int(found.sum()) + int((~found[best]).sum())


def wordllama_embed() -> Callable[[list[str]], NDArray[np.float32]]:
    """WordLlama's 256-dimension embeddings (its ``l2_supercat`` model), from the files its wheel
    ships: never a download. Importing ``wordllama`` configures the root logger (it calls
    ``logging.basicConfig``); a library's import should not, so that is undone here."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import numpy as np
        import wordllama
    except ModuleNotFoundError as error:
        raise _missing(error) from None
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    # Its loader looks for the bundled tokenizer under a folder name the wheel does not use, so
    # the package's own folder is given as the cache it reads (downloads are off either way).
    model = wordllama.WordLlama.load(
        cache_dir=Path(wordllama.__file__).parent, disable_download=True
    )

    def embed(texts: list[str]) -> NDArray[np.float32]:
        return np.asarray(model.embed(texts), np.float32)

    return embed


def _best(scores: NDArray[np.float64], limit: int) -> NDArray[np.intp]:
    """The positions of the ``limit`` best scores, best first, ties in position order: those
    from the ``limit``-th best value up (found without sorting them all), sorted stably."""
    import numpy as np

    candidates = np.arange(len(scores))
    if limit < len(scores):
        least = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        candidates = np.flatnonzero(scores >= least)
    return candidates[np.argsort(-scores[candidates], kind="stable")][:limit]


def _unit(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row scaled to length 1; a row of zeros (a text of no known token) stays zeros."""
    import numpy as np

    vectors = np.nan_to_num(vectors.reshape(len(vectors), -1))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: NDArray[np.float32] = np.divide(
        vectors, norms, out=np.zeros_like(vectors), where=norms > 0
    )
    return unit


def _missing(error: ModuleNotFoundError) -> ModuleNotFoundError:
    return missing_extra(
        error,
        extra="embeddings",
        modules=("numpy", "wordllama"),
        needed_by="at.presentation.HybridRanker",
    )
