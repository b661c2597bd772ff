from __future__ import annotations

import amends_toolkit as at
from amends_toolkit import presentation, presentations


def test_the_presentation_facade_holds_call_restrict_and_merge() -> None:
    assert presentation.__all__ == ("call", "merge", "restrict")
    assert at.presentation.call is presentations.call
    assert at.presentation.restrict is presentations.restrict
    assert at.presentation.merge is presentations.merge


def test_tool_search_is_host_facing() -> None:
    assert {"tool_search", "presentation"} <= set(at.__all__)
    assert at.tool_search is presentations.tool_search
