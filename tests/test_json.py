"""Reading JSON from outside: no NaN, bounded depth, linear and never recursive."""

from __future__ import annotations

import pytest

from amends_toolkit._json import JsonRefused, JsonTooDeep, input_refusal, loads, refusal


@pytest.mark.parametrize(
    "text",
    ["NaN", "[1, Infinity]", '{"a": -Infinity}', "{", "", "[1e999]", b'{"a": -1e400}', b'"\xff"'],
)
def test_what_is_no_json_is_refused(text: str | bytes) -> None:
    with pytest.raises(JsonRefused):
        loads(text)


@pytest.mark.parametrize("depth", [5, 1_000, 100_000])
def test_json_nested_past_the_limit_is_too_deep(depth: int) -> None:
    with pytest.raises(JsonTooDeep):
        loads("[" * depth + "]" * depth, max_depth=4)
    assert loads("[[[[]]]]", max_depth=4) == [[[[]]]]


def test_objects_and_arrays_both_count_as_depth() -> None:
    # The walk is skipped only when the text holds no more "[" and "{" together than the limit.
    with pytest.raises(JsonTooDeep):
        loads('{"a": [{"b": [{"c": 1}]}]}', max_depth=4)
    with pytest.raises(JsonTooDeep):
        loads('{"a":' * 5 + "1" + "}" * 5, max_depth=4)
    assert loads('{"a": [{"b": [1]}]}', max_depth=4) == {"a": [{"b": [1]}]}


def test_brackets_in_strings_are_no_depth() -> None:
    assert loads('["[[[[{{{{", {"a": "]]]]"}]', max_depth=2) == ["[[[[{{{{", {"a": "]]]]"}]
    assert loads(b'\xef\xbb\xbf{"a": [1.5]}', max_depth=2) == {"a": [1.5]}


def test_a_values_depth_counts_containers() -> None:
    assert refusal({}, max_depth=1) is None
    assert refusal({"a": {}}, max_depth=1) == "nests more than 1 levels"
    assert refusal([1, "x", None], max_depth=1) is None
    assert refusal(7, max_depth=0) is None
    assert refusal({"a": [float("nan")]}) == "holds NaN or Infinity"
    assert input_refusal({"a": float("inf")}) == "The input holds NaN or Infinity; send plain JSON."


@pytest.mark.parametrize("value", [{1: 2}, {"a": {1, 2}}, {"a": b"x"}, [object()]])
def test_an_input_holding_what_json_has_not_is_refused(value: object) -> None:
    assert input_refusal(value) is not None
    assert input_refusal({"a": [True, None, "x", 1.5, (1, 2)]}) is None


def test_a_flat_input_is_told_as_the_walk_tells_it() -> None:
    # One object of plain scalars under string keys is told at once; all else is walked.
    flat = {"s": "x", "n": 7, "b": True, "z": None}
    assert input_refusal(flat) is None
    assert (
        input_refusal(flat, max_depth=0) == "The input nests more than 0 levels; send plain JSON."
    )
    assert input_refusal({"n": 7, "f": float("nan")}) is not None
    assert input_refusal({"n": 7, 2: "x"}) is not None
    assert input_refusal({"n": 7, "f": 1.5, "l": [1]}) is None
