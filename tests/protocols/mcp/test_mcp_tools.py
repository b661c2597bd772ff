from __future__ import annotations

import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject
from amends_toolkit.protocols.mcp._jsonrpc import Notification, ProtocolError
from amends_toolkit.protocols.mcp._results import (
    MAX_PROGRESS_MESSAGE,
    Complete,
    InputRequired,
    ToolFailed,
    call_params,
    read_call_result,
    read_progress,
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


@pytest.mark.parametrize("check_marks", [True, False])
def test_a_tool_that_only_runs_as_a_task_is_left_out(check_marks: bool) -> None:
    def tool(name: str, support: str) -> JsonObject:
        return {
            "name": name,
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": support},
        }

    page = read_tools_page(
        {
            "tools": [
                tool("task", "required"),
                tool("either", "optional"),
                tool("plain", "forbidden"),
            ]
        },
        check_marks=check_marks,
    )
    assert [t.definition.name for t in page.tools] == ["either", "plain"]
    [rejected] = page.rejected
    assert rejected.name == "task"
    assert "taskSupport" in rejected.reason


IMAGE: JsonObject = {"type": "image", "data": "iVBO", "mimeType": "image/png"}


def test_structured_content_is_the_answer_unless_the_content_holds_media() -> None:
    text: JsonObject = {"type": "text", "text": '{"a": 1}'}
    plain: JsonObject = {"content": [text], "structuredContent": {"a": 1}}
    assert read_call_result(plain) == Complete(value={"a": 1})
    mixed: JsonObject = {"content": [text, IMAGE], "structuredContent": {"a": 1}}
    assert read_call_result(mixed) == Complete(value=[text, IMAGE])


def test_a_progress_notification_is_read_for_its_own_token_only() -> None:
    def note(params: JsonObject, method: str = "notifications/progress") -> Notification:
        return Notification(method=method, params=params)

    base: JsonObject = {"progressToken": 7, "progress": 2, "total": 4, "message": "half"}
    assert read_progress(note(base), 7) == at.Progress(progress=2.0, total=4.0, message="half")
    assert read_progress(note({"progressToken": 7, "progress": 1.5}), 7) == at.Progress(
        progress=1.5
    )
    assert read_progress(note(base), 8) is None
    assert read_progress(note(base, "notifications/message"), 7) is None
    assert read_progress(note({**base, "progressToken": "7"}), 7) is None
    assert read_progress(note({"progressToken": True, "progress": 1}), 1) is None
    for bad in ("2", None, True, float("nan"), float("inf")):
        assert read_progress(note({**base, "progress": bad}), 7) is None
    long = read_progress(note({**base, "message": "x" * 5000, "total": "4"}), 7)
    assert long is not None
    assert long.total is None
    assert long.message == "x" * MAX_PROGRESS_MESSAGE


def test_a_call_asks_for_progress_only_with_a_token() -> None:
    assert "_meta" not in call_params("t", {})
    assert call_params("t", {}, progress_token=3)["_meta"] == {"progressToken": 3}
