"""``at.presentation``: run a tool of a toolkit, and make toolkits of some tools of others.

Search and code mode each take the toolkit an assembly gave and give another, through which the
model reaches the first; these are the pieces they share, for hosts too::

    result = await at.presentation.call(toolkit, "tasks__list_tasks", {})   # or raises at.Failure
    reading = at.presentation.restrict(toolkit, ["tasks__list_tasks", "tasks__get_task"])
    both = at.presentation.merge(reading, other)                           # at.NameClash on a clash

and what ``at.tool_search(toolkit, ranker=...)`` ranks with: any :class:`ToolRanker`, such as the
built-in :class:`SearchIndex` (the default) or :class:`HybridRanker`, the index fused with a text
embedding (the ``embeddings`` extra)::

    ranker = at.presentation.HybridRanker.with_wordllama(list(toolkit.tools.values()))
    searched = at.tool_search(toolkit, ranker=ranker)
"""

from __future__ import annotations

from amends_toolkit.presentations import (
    HybridRanker,
    SearchIndex,
    ToolRanker,
    call,
    merge,
    restrict,
)

__all__ = ("HybridRanker", "SearchIndex", "ToolRanker", "call", "merge", "restrict")
