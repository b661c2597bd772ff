"""The hybrid ranker (``at.presentation.HybridRanker``) through ``at.tool_search``'s seam."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np
import pytest

import amends_toolkit as at
from amends_toolkit.presentations._hybrid import HybridRanker, tool_text
from amends_toolkit.presentations._index import SearchIndex

from .sources import Recording, allow_all, define
from .test_search import found, search

if TYPE_CHECKING:
    from numpy.typing import NDArray

pytestmark = pytest.mark.anyio

DEFINITIONS = [
    ("get_artist", "Get catalog information for a single artist."),
    ("get_album", "Get catalog information for a single album."),
    ("get_track", "Get catalog information for a single track."),
    ("search_playlists", "Search for playlists by keyword."),
    ("follow_user", "Follow another user."),
    ("get_guild", "Get a guild by its id."),
    ("leave_guild", "Leave a guild."),
    ("list_channels", "List the channels of a guild."),
    ("get_book", "Get a book by its ISBN."),
    ("list_orders", "List the orders of a customer."),
]


def toolkit() -> at.Toolkit:
    definitions = [define(name, description) for name, description in DEFINITIONS]
    return at.assemble([at.Member(Recording("shop"), definitions)], allow_all)


@pytest.fixture(scope="module")
def wordllama_ranker() -> HybridRanker:
    return HybridRanker.with_wordllama(list(toolkit().tools.values()))


@pytest.mark.parametrize(
    ("query", "tool"),
    [
        ("a musician's details", "shop__get_artist"),
        ("details of a novel", "shop__get_book"),
        ("purchases of a client", "shop__list_orders"),
        ("quit a discord server", "shop__leave_guild"),
    ],
)
async def test_the_hybrid_finds_by_meaning_a_tool_whose_words_the_query_lacks(
    wordllama_ranker: HybridRanker, query: str, tool: str
) -> None:
    by_words = await search(at.tool_search(toolkit()), {"query": query})
    assert tool not in found(by_words)
    hybrid = at.tool_search(toolkit(), ranker=wordllama_ranker)
    answer = await search(hybrid, {"query": query, "limit": 3})
    assert found(answer)[0] == tool
    # nothing the words find, so each tool given was brought in by its meaning
    assert answer["matched"] == 3


async def test_the_hybrid_keeps_what_the_words_find_first(wordllama_ranker: HybridRanker) -> None:
    hybrid = at.tool_search(toolkit(), ranker=wordllama_ranker)
    answer = await search(hybrid, {"query": "leave a guild", "limit": 2})
    assert found(answer)[0] == "shop__leave_guild"


def letters(texts: list[str]) -> NDArray[np.float32]:
    """A deterministic stand-in embedding: how often each letter occurs."""
    out = np.zeros((len(texts), 26), np.float32)
    for row, text in enumerate(texts):
        for char in text.lower():
            if "a" <= char <= "z":
                out[row, ord(char) - ord("a")] += 1
    return out


def test_at_weight_zero_the_hybrid_ranks_as_the_built_in_index() -> None:
    # every tool read-only, so a query's intent ("show") asks for the kind of all of them
    reading = at.Annotations(read_only=True)
    tools = [attrs.evolve(tool, annotations=reading) for tool in toolkit().tools.values()]
    for query in ("get a guild", "catalog information", "list", "show a guild"):
        words = SearchIndex(tools).rank(query, 3)
        assert HybridRanker(tools, letters, weight=0.0).rank(query, 3) == (
            list(words.positions),
            words.matched,
        )


def test_at_weight_one_the_hybrid_ranks_by_the_embedding_alone() -> None:
    tools = list(toolkit().tools.values())
    vectors = letters([tool_text(tool) for tool in tools])
    asked = letters(["leave the guild"])[0]
    cosine = vectors @ asked / np.linalg.norm(vectors, axis=1)
    expected = [int(p) for p in np.argsort(-cosine, kind="stable")[:4]]
    assert HybridRanker(tools, letters, weight=1.0).rank("leave the guild", 4)[0] == expected


def test_a_query_with_no_words_lists_the_tools_in_order() -> None:
    tools = list(toolkit().tools.values())
    assert HybridRanker(tools, letters).rank("?!", 3) == ([0, 1, 2], len(tools))


def test_a_toolkit_with_no_tools_finds_none() -> None:
    assert HybridRanker([], letters).rank("anything", 5) == ([], 0)


def test_the_embedded_text_is_bounded_and_leaves_the_source_prefix_out() -> None:
    tool = at.Tool(name="shop__get_book", description="x " * 5_000, input_schema={})
    text = tool_text(tool)
    assert text.startswith("get book. x x")
    assert len(text) == 2_000


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_a_weight_outside_zero_to_one_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match="weight must be from 0 to 1"):
        HybridRanker([], letters, weight=weight)


def test_loading_wordllama_leaves_the_root_logger_as_it_was() -> None:
    # in a process of its own: wordllama configures logging once, when first imported
    code = (
        "import logging\n"
        "from amends_toolkit.presentations._hybrid import wordllama_embed\n"
        "embed = wordllama_embed()\n"
        "root = logging.getLogger()\n"
        "assert root.handlers == [] and root.level == logging.WARNING, root\n"
        "assert embed(['a tool']).shape == (1, 256)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
