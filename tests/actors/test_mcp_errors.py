from __future__ import annotations

import re

import pytest

import amends_toolkit as at
from amends_toolkit.actors import _mcp_errors as _errors
from amends_toolkit.actors._mcp_errors import error_for_rpc, error_for_status
from amends_toolkit.protocols.http import outcome
from amends_toolkit.protocols.mcp._jsonrpc import ErrorResponse


def _table_rows() -> list[tuple[str, str]]:
    rows = []
    for line in (_errors.__doc__ or "").splitlines():
        match = re.match(r"^(-?\d[\d /,-]*?|[\w ,/()\"-]+?)\s{2,}(\w+Error)", line)
        if match:
            rows.append((match.group(1).strip(), match.group(2)))
    return rows


def test_every_reason_in_the_documented_table_exists() -> None:
    rows = _table_rows()
    assert len(rows) >= 15
    assert {reason for _, reason in rows} <= set(at._errors.REASONS)


@pytest.mark.parametrize(
    ("code", "method", "reason"),
    [
        (-32602, "tools/call", at.InvalidInputError),
        (-32602, "tools/list", at.InvalidResponseError),
        (-32601, "tools/list", at.UnsupportedError),
        (-32020, "tools/call", at.InvalidResponseError),
        (-32603, "tools/list", at.UnavailableError),
        (-32099, "tools/call", at.CallFailedError),
        (-32099, "tools/list", at.InvalidResponseError),
        (1, "initialize", at.InvalidResponseError),
    ],
)
def test_each_code_maps_to_one_reason(
    code: int, method: str, reason: type[at.ToolSourceError]
) -> None:
    error = error_for_rpc("s", ErrorResponse(id=1, code=code, message="said"), method=method)
    assert type(error) is reason
    assert error.source == "s"


def test_a_servers_words_reach_the_model_cut_to_500_characters() -> None:
    error = error_for_rpc(
        "s", ErrorResponse(id=1, code=-32602, message="x" * 900), method="tools/call"
    )
    assert len(error.model_message) == 500


def test_an_error_status_with_a_json_rpc_body_takes_the_bodys_reason_unless_it_is_auth_or_5xx() -> (
    None
):
    body = ErrorResponse(id=1, code=-32602, message="bad text")
    assert type(error_for_status("s", 400, method="tools/call", error=body)) is at.InvalidInputError
    assert (
        type(error_for_status("s", 401, method="tools/call", error=body)) is at.AuthenticationError
    )
    assert type(error_for_status("s", 500, method="tools/call", error=body)) is at.UnavailableError


def test_the_statuses_of_authentication_and_unavailability_are_the_http_sources() -> None:
    for status in range(100, 600):
        reason = type(error_for_status("s", status, method="tools/call"))
        kind = outcome(status)
        assert (reason is at.AuthenticationError) == (kind == "authentication"), status
        if kind == "unavailable":
            assert reason is at.UnavailableError, status
