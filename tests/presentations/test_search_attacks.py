"""A model's query, written to make tool search work: the search is linear in the query whatever
it holds, a query past the bound is a clear ``InvalidInputError`` failure that never reaches the
ranker, and a search ranks in a worker thread while the event loop goes on.

The attack of issue 27: one query of 48 KB of distinct words with ``limit: 1`` held the event
loop for seconds (the sum of its words' scores gained a bit plane per word), 1.2 MB for minutes.
"""

from __future__ import annotations

import gc
import math
import string
import threading
import time
import tracemalloc
from collections.abc import Callable

import anyio
import anyio.to_thread
import pytest

import amends_toolkit as at
from amends_toolkit.presentations import SearchIndex, _index
from amends_toolkit.presentations._index import Hits
from amends_toolkit.presentations._search import MAX_QUERY_LENGTH

from .sources import Recording, allow_all, define

pytestmark = pytest.mark.anyio


def name(number: int) -> str:
    """A word of letters only (a digit would cut it in two), distinct for each number."""
    letters = []
    number += 26 * 26  # three letters at least, as a word with other forms has
    while number:
        number, digit = divmod(number, 26)
        letters.append(string.ascii_lowercase[digit])
    return "".join(letters)


TOOLS = at.assemble(
    [
        at.Member(
            Recording("notes"),
            [define(f"note_{name(i)}", f"Read a note about {name(i)}.") for i in range(20)],
        )
    ],
    allow_all,
)
"""Twenty tools, all of them found by ``note``: more matches than ``limit: 1``."""


def joined(word: Callable[[int], str], size: int) -> str:
    """``note`` and then words ``word(0)``, ``word(1)``, ... until the text has ``size``
    characters."""
    parts, length = ["note"], 4
    while length < size:
        parts.append(word(len(parts)))
        length += len(parts[-1]) + 1
    return " ".join(parts)[:size]


# What a query may hold to make the index work: every shape its reading has a path for.
SHAPES: dict[str, Callable[[int], str]] = {
    # the attack: a new word each time (each its own postings and bit planes)
    "distinct words": lambda size: joined(name, size),
    # words of the catalog, each time again: the same postings, asked for again
    "repeated words": lambda size: joined(lambda i: ("note", "read", "about")[i % 3], size),
    # one long word, which begins with a word of the catalog (a form it is never read as)
    "one long word": lambda size: "note about" + "a" * (size - 10),
    "long distinct words": lambda size: joined(lambda i: name(i) * 40, size),
    # camelCase and HTTPResponse runs: the pattern that cuts words looks ahead
    "case runs": lambda size: joined(lambda i: "ABC" * 30 + name(i) + "Ab" * 30, size),
    # letters of other scripts, combining marks, and letters whose lowercase is longer
    "unicode letters": lambda size: joined(
        lambda i: "İẞǅ" + "".join("αβγδεζηθικλμ"[int(d)] for d in str(i)) + "e\u0301", size
    ),
}


def cpu_seconds(query: str, repeats: int = 3) -> float:
    """The least CPU time a search of ``query`` took in a fresh index (none of its words'
    postings kept from a run before), over ``repeats`` runs: what other processes on a busy
    machine cost it is left out, so two sizes compare as a ratio."""
    tools = list(TOOLS.tools.values())
    best = math.inf
    for _ in range(repeats):
        index = SearchIndex(tools)
        started = time.process_time()
        index.rank(query, 1)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("shape", SHAPES)
def test_a_search_s_work_is_linear_in_its_query(shape: str) -> None:
    small, large = SHAPES[shape](3_000), SHAPES[shape](24_000)
    assert SearchIndex(list(TOOLS.tools.values())).rank(large, 1).matched == 20
    # Linear work gives eight times as much; quadratic (as it was) sixty-four.
    assert cpu_seconds(large) < 24 * cpu_seconds(small) + 0.005


def test_the_postings_kept_of_a_stream_of_new_words_stay_within_the_cache_s_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bound = 2**20
    monkeypatch.setattr(_index, "_CACHE_BYTES", bound)
    index = SearchIndex(list(TOOLS.tools.values()))
    query = SHAPES["distinct words"](48_000)  # 9,000 words, each kept as it is read
    gc.collect()
    tracemalloc.start()
    try:
        index.rank(query, 1)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < bound


async def test_a_query_past_the_bound_is_an_invalid_input_failure_the_ranker_never_sees() -> None:
    asked: list[str] = []

    class Ranker:
        def rank(self, query: str, limit: int) -> tuple[list[int], int]:
            asked.append(query)
            return [0], 1

    presented = at.tool_search(TOOLS, ranker=Ranker())
    longest = SHAPES["distinct words"](MAX_QUERY_LENGTH)
    failure = at.Failure.from_json(
        await presented.call("tool_search", {"query": longest + "x", "limit": 1})
    )
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert f"is longer than {MAX_QUERY_LENGTH} characters" in failure.message
    assert asked == []
    answer = await presented.call("tool_search", {"query": longest, "limit": 1})
    assert at.Failure.from_json(answer) is None
    assert asked == [longest]


class Held:
    """``SearchIndex.rank`` held until the test lets it go: it says when a search has begun,
    then waits, in whatever thread it runs, for the event loop to let it go on. Ranking on the
    event loop it would wait in vain (nothing else runs there until it returns), give up, and
    fail the search."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, patience: float = 20.0) -> None:
        self.begun = threading.Event()
        self.released = threading.Event()
        rank = SearchIndex.rank

        def held(index: SearchIndex, query: str, limit: int) -> Hits:
            self.begun.set()
            if not self.released.wait(patience):
                raise AssertionError("the search held the event loop")
            return rank(index, query, limit)

        monkeypatch.setattr(SearchIndex, "rank", held)

    async def wait_begun(self) -> None:
        assert await anyio.to_thread.run_sync(self.begun.wait, 20), "the search never began"


async def test_a_search_ranks_in_a_worker_thread_while_the_event_loop_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = Held(monkeypatch)
    presented = at.tool_search(TOOLS)
    query = SHAPES["distinct words"](MAX_QUERY_LENGTH)
    answers: list[at.JsonValue] = []

    async def search() -> None:
        answers.append(await presented.call("tool_search", {"query": query, "limit": 1}))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(search)
        await held.wait_begun()
        # This task runs while the search is in progress: the loop is free.
        held.released.set()
    [answer] = answers
    assert at.Failure.from_json(answer) is None, answer
    assert isinstance(answer, dict)
    assert answer["matched"] == 20
