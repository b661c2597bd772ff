"""An OpenAPI document is a peer's text: its aliases and its nesting are bounded before anything
is expanded, in time linear in its size, and a bomb is a DocumentError."""

from __future__ import annotations

import time

import pytest

import amends_toolkit as at

from .peers import peak_memory

MiB = 1024 * 1024


def laughs(levels: int, width: int = 9) -> str:
    """Nested aliases, none containing itself: ``width ** levels`` nodes once expanded."""
    lines = ["a0: &a0 [lol]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded() -> None:
    bomb = laughs(9)  # 547 bytes, 387 million nodes expanded
    assert len(bomb) < 600
    with peak_memory() as peak, pytest.raises(at.openapi.DocumentError, match="aliases"):
        at.openapi.parse_document(bomb)
    assert peak[0] < 1 * MiB


def test_aliases_within_the_budget_are_expanded() -> None:
    assert at.openapi.parse_document(laughs(2, width=3)) == {
        "a0": ["lol"],
        "a1": [["lol"]] * 3,
        "a2": [[["lol"]] * 3] * 3,
    }
    with pytest.raises(at.openapi.DocumentError, match="aliases"):
        at.openapi.parse_document(laughs(2, width=3), max_alias_nodes=10)


def _refusal_seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        with pytest.raises(at.openapi.DocumentError):
            at.openapi.parse_document(text)
        best = min(best, time.perf_counter() - started)
    return best


def test_refusing_an_alias_bomb_is_linear_in_the_documents_size() -> None:
    # Each document is many bombs side by side, each under the budget, all together over it.
    def bombs(count: int) -> str:
        return "\n".join(
            f"b{n}: &b{n} [" + ", ".join(["*a4"] * 9) + "]" for n in range(count)
        ).join([laughs(4), "\n"])

    small, large = _refusal_seconds(bombs(1_000)), _refusal_seconds(bombs(4_000))
    # Four times the text, about four times the time (plus PyYAML's own, which is linear too).
    assert large / small < 8


@pytest.mark.parametrize("depth", [129, 1_000, 100_000])
def test_json_nested_too_deep_is_a_document_error(depth: int) -> None:
    text = '{"a": ' * depth + "1" + "}" * depth
    with pytest.raises(at.openapi.DocumentError, match="too deep"):
        at.openapi.parse_document(text)


@pytest.mark.parametrize("depth", [129, 900, 100_000])
def test_yaml_nested_too_deep_is_a_document_error(depth: int) -> None:
    text = "[" * depth + "]" * depth + "\n"
    with pytest.raises(at.openapi.DocumentError):
        at.openapi.parse_document(text)


def test_the_depth_limit_is_an_option() -> None:
    text = '{"a": {"b": {"c": 1}}}'
    assert at.openapi.parse_document(text, max_depth=3) == {"a": {"b": {"c": 1}}}
    with pytest.raises(at.openapi.DocumentError):
        at.openapi.parse_document(text, max_depth=2)
    with pytest.raises(at.openapi.DocumentError):
        at.openapi.parse_document("a:\n  b:\n    c: 1\n", max_depth=2)


def test_a_deep_json_document_is_refused_in_linear_time_and_bounded_memory() -> None:
    def deep(depth: int) -> str:
        return "[" * depth + "]" * depth

    with peak_memory() as peak:
        small, large = _refusal_seconds(deep(1 * MiB)), _refusal_seconds(deep(4 * MiB))
    assert large / small < 8
    assert peak[0] < 32 * MiB
