from __future__ import annotations

import pytest

import amends_toolkit as at
from amends_toolkit.protocols.mcp._jsonrpc import ProtocolError
from amends_toolkit.protocols.mcp._results import (
    Complete,
    InputRequired,
    ToolFailed,
    read_call_result,
)
from amends_toolkit.protocols.mcp._tools import read_tools_page


def test_a_page_keeps_good_tools_and_sets_apart_bad_ones() -> None:
    page = read_tools_page(
        {
            "tools": [
                {
                    "name": "a",
                    "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": "yes"},
                },
                {"inputSchema": {}},
                {"name": "b", "inputSchema": "none"},
                {
                    "name": "c",
                    "inputSchema": {"properties": {"p": {"type": "number", "x-mcp-header": "P"}}},
                },
            ],
            "nextCursor": "",
        },
        check_marks=True,
    )
    assert [t.definition.name for t in page.tools] == ["a"]
    assert page.tools[0].definition.annotations == at.Annotations()
    assert [r.name for r in page.rejected] == ["?", "b", "c"]
    assert page.next_cursor == ""


def test_without_mark_checks_a_marked_tool_is_kept_as_it_is() -> None:
    page = read_tools_page(
        {
            "tools": [
                {
                    "name": "c",
                    "inputSchema": {"properties": {"p": {"type": "number", "x-mcp-header": "P"}}},
                }
            ]
        },
        check_marks=False,
    )
    assert [t.marks for t in page.tools] == [()]


@pytest.mark.parametrize("result", [{}, {"tools": {}}, {"tools": [], "nextCursor": 3}])
def test_a_result_without_a_tools_list_is_a_protocol_error(result: dict[str, object]) -> None:
    with pytest.raises(ProtocolError):
        read_tools_page(result, check_marks=True)  # type: ignore[arg-type]


def test_call_results_read_as_outcomes() -> None:
    assert read_call_result({"content": [], "structuredContent": 0}) == Complete(value=0)
    assert read_call_result({"isError": True, "content": []}) == ToolFailed(
        text="The tool reported a failure."
    )
    assert read_call_result({"resultType": "input_required", "requestState": "s"}) == InputRequired(
        asks_input=False, request_state="s"
    )
    assert read_call_result(
        {"resultType": "input_required", "inputRequests": {"k": {}}}
    ) == InputRequired(asks_input=True, request_state=None)
