"""The bench's harness: subjects measured side by side take turns fairly."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from bench._harness import compare

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_rounds_of_one_slice_alternate_which_subject_goes_first(concurrency: int) -> None:
    calls: list[str] = []

    def subject(label: str) -> Callable[[], Awaitable[None]]:
        async def call() -> None:
            calls.append(label)

        return call

    per_turn = 10 * concurrency  # too few calls for more than one slice a round
    await compare(
        "g",
        [("a", subject("a"), ""), ("b", subject("b"), "a")],
        calls=per_turn,
        concurrency=concurrency,
        rounds=4,
    )
    measured = calls[2 * max(concurrency, per_turn // 10) :]  # after each subject's warm-up
    turns = [measured[i : i + per_turn] for i in range(0, len(measured), per_turn)]
    assert [set(turn) for turn in turns] == [{"a"}, {"b"}, {"b"}, {"a"}] * 2
    assert [turn[0] for turn in turns[::2]] == ["a", "b", "a", "b"]
