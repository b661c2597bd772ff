from __future__ import annotations

import pickle

import pytest

import amends_toolkit as at

REASONS = [
    at.AuthenticationError,
    at.NotFoundError,
    at.InvalidInputError,
    at.CallFailedError,
    at.UnavailableError,
    at.InvalidResponseError,
    at.UnsupportedError,
    at.UnknownError,
]


@pytest.mark.parametrize("reason", REASONS)
def test_every_reason_names_its_source_and_is_a_tool_source_error(
    reason: type[at.ToolSourceError],
) -> None:
    error = reason(source="tasks", message="at https://internal.example/x with Bearer abc")
    assert isinstance(error, at.ToolSourceError)
    assert error.source == "tasks"
    assert error.reason == reason.__name__
    assert error.retryable is (reason is at.UnavailableError)


@pytest.mark.parametrize(
    "reason", [r for r in REASONS if r not in (at.InvalidInputError, at.CallFailedError)]
)
def test_a_model_reads_only_the_default_message_of_reasons_that_may_name_internals(
    reason: type[at.ToolSourceError],
) -> None:
    error = reason(source="tasks", message="GET https://internal.example/x: 502, token=abc")
    assert error.model_message == reason.default_message
    assert "internal.example" not in error.model_message
    assert "internal.example" in str(error)  # the host still reads it


@pytest.mark.parametrize("reason", [at.InvalidInputError, at.CallFailedError])
def test_a_model_reads_the_description_written_for_it(reason: type[at.ToolSourceError]) -> None:
    error = reason(source="tasks", message="the title must not be empty")
    assert error.model_message == "the title must not be empty"


def test_unavailable_carries_retry_after_when_the_system_said() -> None:
    assert at.UnavailableError(source="s").retry_after is None
    assert at.UnavailableError(source="s", retry_after=2.5).retry_after == 2.5


def test_an_error_becomes_the_failure_json_a_model_reads() -> None:
    failure = at.UnavailableError(source="s", message="10.0.0.1 down").to_failure()
    assert failure.to_json() == {
        "isFailure": True,
        "code": "UnavailableError",
        "message": at.UnavailableError.default_message,
        "retryable": True,
    }


def test_a_failure_is_read_back_from_its_json_and_nothing_else_is_a_failure() -> None:
    failure = at.Failure(code="CallFailedError", message="no", retryable=False)
    assert at.Failure.from_json(failure.to_json()) == failure
    assert at.Failure.from_json({"isFailure": False, "code": "x", "message": "y"}) is None
    assert at.Failure.from_json({"code": "x", "message": "y"}) is None
    assert at.Failure.from_json({"isFailure": True, "code": 1, "message": "y"}) is None
    assert at.Failure.from_json([1, 2]) is None
    assert at.Failure.from_json(None) is None


def test_errors_and_failures_survive_pickling() -> None:
    error = at.UnavailableError(source="s", message="m", retry_after=3.0)
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.source, again.message, again.retry_after) == (
        at.UnavailableError,
        "s",
        "m",
        3.0,
    )
    failure = at.Failure(code="NotFoundError", message="m")
    assert pickle.loads(pickle.dumps(failure)) == failure


def test_a_name_clash_holds_every_clash_and_says_how_to_fix_it() -> None:
    clash = at.NameClash({"a__x": [("a", "x"), ("a", "X")], "b__y": [("b", "y.z"), ("b", "y_z")]})
    assert set(clash.clashes) == {"a__x", "b__y"}
    assert "rename a source or block a tool" in str(clash)
