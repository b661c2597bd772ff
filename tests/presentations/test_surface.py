from __future__ import annotations

import amends_toolkit as at
from amends_toolkit import presentation, presentations


def test_the_presentation_facade_holds_call_restrict_merge_and_the_rankers() -> None:
    names = ("HybridRanker", "SearchIndex", "ToolRanker", "call", "merge", "restrict")
    assert presentation.__all__ == names
    for name in names:
        assert getattr(at.presentation, name) is getattr(presentations, name)


def test_tool_search_is_host_facing() -> None:
    assert {"tool_search", "presentation"} <= set(at.__all__)
    assert at.tool_search is presentations.tool_search
