"""An OpenAPI document is a peer's text: its aliases and its nesting are bounded before anything
is expanded, in time linear in its size, and a bomb is a DocumentError."""

from __future__ import annotations

import pytest

import amends_toolkit as at

from .peers import cpu_seconds, peak_memory

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


def refuse(text: str) -> None:
    with pytest.raises(at.openapi.DocumentError):
        at.openapi.parse_document(text)


def test_refusing_an_alias_bomb_is_linear_in_the_documents_size() -> None:
    # Each document is many bombs side by side, each under the budget, all together over it.
    def bombs(count: int) -> str:
        return "\n".join(
            f"b{n}: &b{n} [" + ", ".join(["*a4"] * 9) + "]" for n in range(count)
        ).join([laughs(4), "\n"])

    small, large = bombs(500), bombs(4_000)
    # Eight times the text, about eight times the time (PyYAML's own reading is linear too);
    # expanding the aliases would be far more.
    assert cpu_seconds(lambda: refuse(large), 3) / cpu_seconds(lambda: refuse(small), 3) < 20


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
    small, large = "[" * MiB + "]" * MiB, "[" * (8 * MiB) + "]" * (8 * MiB)
    with peak_memory() as peak:
        refuse(large)
    # The text is all it holds: nothing of the size of the nesting is built.
    assert peak[0] < 1 * MiB
    # Refused at the parser's own depth bound, whatever the text's length.
    assert cpu_seconds(lambda: refuse(large)) < 20 * cpu_seconds(lambda: refuse(small)) + 0.01
