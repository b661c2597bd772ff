from __future__ import annotations

import random

import pytest

from amends_toolkit import Annotations, JsonObject
from amends_toolkit.presentations._index import (
    MAX_PARAMETER_WORDS,
    SearchIndex,
    parameter_text,
    summary,
    tool_kind,
)
from amends_toolkit.presentations._words import words
from amends_toolkit.runtime import Tool


def tools(pairs: list[tuple[str, str]]) -> list[Tool]:
    return [Tool(name=name, description=text, input_schema={}) for name, text in pairs]


def index(pairs: list[tuple[str, str]]) -> SearchIndex:
    return SearchIndex(tools(pairs))


PETS = [
    ("list_pets", "List every pet in the store."),
    ("createPet", "Add a new pet to the store."),
    ("delete-pet", "Remove a pet from the store for good."),
    ("get_repository", "Read one code repository."),
    ("send_sms", "Send a text message to a phone number."),
]


def names(pairs: list[tuple[str, str]], query: str, limit: int = 5) -> list[str]:
    hits = index(pairs).rank(query, limit)
    return [pairs[position][0] for position in hits.positions]


def test_a_query_word_scores_for_a_name_word_it_begins() -> None:
    assert names(PETS, "repo")[0] == "get_repository"


def test_a_word_of_the_name_counts_more_than_one_of_the_description() -> None:
    tools = [
        ("archive_note", "Moves a pet note out of sight."),
        ("feed_pet", "Gives food."),
    ]
    assert names(tools, "pet") == ["feed_pet", "archive_note"]


def test_a_rare_word_weighs_more_than_a_common_one() -> None:
    tools = [(f"get_item_{i}", "Get an item.") for i in range(20)]
    tools.append(("get_invoice", "Get an invoice."))
    assert names(tools, "get invoice", limit=1) == ["get_invoice"]


def test_a_tool_that_scores_nothing_does_not_match() -> None:
    hits = index(PETS).rank("pet", 20)
    assert hits.matched == 3
    assert len(hits.positions) == 3
    assert index(PETS).rank("zebra", 5).matched == 0
    assert index(PETS).rank("zebra", 5).positions == ()


def test_a_query_with_no_words_lists_the_tools_in_order() -> None:
    for query in ("", "  ", "?!"):
        hits = index(PETS).rank(query, 3)
        assert hits.positions == (0, 1, 2)
        assert hits.matched == len(PETS)


def test_common_words_are_left_out_of_a_query_that_has_others() -> None:
    # "the" is in every description here; only "phone" may match
    assert index(PETS).rank("the phone", 5).matched == 1


def test_ties_keep_catalog_order() -> None:
    tools = [(f"tool_{i}", "Does the same thing.") for i in range(8)]
    assert index(tools).rank("same thing", 5).positions == (0, 1, 2, 3, 4)


def test_a_verb_of_the_same_action_scores_less_than_the_word_itself() -> None:
    assert names(PETS, "remove a pet")[0] == "delete-pet"
    tools = [("erase_note", "Erases a note."), ("delete_note", "Deletes a note.")]
    assert names(tools, "delete note") == ["delete_note", "erase_note"]


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        index(PETS).rank("pet", 0)


def test_an_empty_catalog_finds_nothing() -> None:
    empty = SearchIndex([])
    assert empty.rank("pet", 5).positions == ()
    assert empty.rank("", 5).matched == 0


_VOCABULARY = [
    "get",
    "list",
    "create",
    "delete",
    "update",
    "remove",
    "add",
    "send",
    "search",
    "find",
    "read",
    "show",
    "user",
    "users",
    "file",
    "files",
    "folder",
    "playlist",
    "track",
    "album",
    "artist",
    "guild",
    "member",
    "members",
    "role",
    "channel",
    "message",
    "messages",
    "store",
    "pet",
    "pets",
    "order",
    "orders",
    "payment",
    "terminal",
    "webhook",
    "key",
    "keys",
    "index",
    "indexes",
    "document",
    "documents",
    "vector",
    "collection",
    "point",
    "points",
    "schedule",
    "workflow",
    "namespace",
    "task",
    "tasks",
]


_HINTS = [
    Annotations(),
    Annotations(read_only=True),
    Annotations(destructive=True),
    Annotations(idempotent=False),
]


def _exhaustive(index: SearchIndex, query: str, limit: int) -> tuple[tuple[int, ...], int]:
    """The same scores summed over every posting of every word, for the tools a word (not a
    kind) finds: what a search must equal."""
    rows = index.terms(query)
    found = {doc for row in rows if row.finds for doc in row.scores}
    scores = {doc: sum(row.scores.get(doc, 0.0) for row in rows) for doc in found}
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return tuple(doc for doc, _ in ranked[:limit]), len(scores)


def test_the_search_ranks_exactly_as_scoring_every_tool_would() -> None:
    rng = random.Random(1234)
    # Zipf-like: a few words in most tools, many in a few, as in real catalogs; and many ties
    weights = [1 / (rank + 1) for rank in range(len(_VOCABULARY))]
    found = []
    for i in range(2000):
        name = "_".join(rng.choices(_VOCABULARY, weights, k=rng.randint(1, 4)))
        text = " ".join(rng.choices(_VOCABULARY, weights, k=rng.randint(0, 25)))
        found.append(
            Tool(
                name=f"{name}_{i % 7}",
                description=text,
                input_schema={},
                annotations=rng.choice(_HINTS),
                keywords=tuple(rng.choices(_VOCABULARY, weights, k=rng.randint(0, 3))),
            )
        )
    built = SearchIndex(found)
    for _ in range(300):
        # words of the vocabulary, some of them asking for a kind ("get", "delete", "send")
        query = " ".join(rng.choices(_VOCABULARY, k=rng.randint(1, 6)))
        limit = rng.choice((1, 5, 20))
        assert built.rank(query, limit) == _exhaustive(built, query, limit), query


def test_the_same_tools_give_the_same_answer() -> None:
    first = index(PETS).rank("add a pet to the store", 5)
    second = index(PETS).rank("add a pet to the store", 5)
    assert first == second


def tool(name: str, description: str, schema: JsonObject) -> Tool:
    return Tool(name=name, description=description, input_schema=schema)


def test_a_word_of_the_parameters_finds_a_tool_but_counts_less_than_the_description() -> None:
    found = [
        tool("send", "Sends it.", {"properties": {"recipient": {"type": "string"}}}),
        tool("list_contacts", "Lists every recipient.", {}),
        tool("ping", "Checks the line.", {}),
    ]
    hits = SearchIndex(found).rank("recipient", 5)
    assert hits.positions == (1, 0)


def test_a_long_schema_does_not_win_by_its_length() -> None:
    long: JsonObject = {f"pet_field_{i}": {"description": "the pet's field"} for i in range(100)}
    found = [
        tool("export", "Exports everything.", {"properties": long}),
        tool("feed", "Feeds a pet.", {}),
    ]
    assert SearchIndex(found).rank("pet", 5).positions == (1, 0)


def test_the_parameters_give_names_descriptions_and_the_schema_they_refer_to() -> None:
    schema: JsonObject = {
        "properties": {
            "channel_id": {"description": "The channel.", "title": "Channel ID"},
            "body": {"$ref": "#/$defs/MessageCreateRequest"},
            "filter": {"type": "object", "properties": {"emoji": {}}},
        },
        "$defs": {"MessageCreateRequest": {"properties": {"content": {}, "tts": {}}}},
    }
    assert parameter_text(schema).split() == [
        "channel",
        "id",
        "channel",
        "id",
        "the",
        "channel",
        "body",
        "message",
        "create",
        "request",
        "content",
        "tts",
        "filter",
        "emoji",
    ]
    assert parameter_text({}) == ""


def test_the_parameters_give_at_most_a_bounded_number_of_words() -> None:
    schema: JsonObject = {"properties": {f"p{i}": {"description": "a b c"} for i in range(1000)}}
    assert len(parameter_text(schema).split()) == MAX_PARAMETER_WORDS
    huge: JsonObject = {"properties": {"p": {"description": "word " * 100_000}}}
    assert len(parameter_text(huge).split()) == MAX_PARAMETER_WORDS


def test_a_query_word_begins_only_words_it_is_not_itself() -> None:
    pairs = [("start_job", "Starts a job."), ("star_repo", "Stars a repository.")]
    # "star" is a word of the catalog: it does not also read as "start"
    assert names(pairs, "star") == ["star_repo"]
    # "repo" is a word of the catalog too; "reposit" is not, and reads as "repository"
    assert names(pairs, "reposit") == ["star_repo"]


def test_a_query_word_longer_than_a_tool_s_word_never_matches_it() -> None:
    pairs = [("health_check", "Checks the service."), ("list_items", "Lists items.")]
    assert names(pairs, "healthy") == []
    assert names(pairs, "musical") == []


REPORTS = [(f"report_{i:02}", f"Report {i} of the quarter.") for i in range(12)] + [
    ("github__delete_repo", "Delete a repository."),
    ("github__create_repo", "Create a repository."),
    ("github__list_issues", "List the issues of a repository."),
    ("github__create_issue", "Open an issue in a repository."),
    ("github__get_user", "Read a user's profile."),
]


def test_a_word_of_the_tools_names_ranks_them_above_a_shorter_word_it_begins() -> None:
    # issue 32, item 8: "report" does not begin "repo", and a rarer "repo" must not win
    hits = index(REPORTS).rank("report", 20)
    assert [REPORTS[p][0] for p in hits.positions] == [name for name, _ in REPORTS[:12]]
    assert hits.matched == 12


def test_a_partial_match_never_outranks_an_exact_one_of_the_same_word() -> None:
    # Words that begin one another; none a verb of RELATED, so only the prefix rule joins them.
    vocabulary = ["rep", "repo", "report", "reporter", "repository", "star", "start", "stat"]
    rng = random.Random(32)
    for _ in range(200):
        pairs = [
            (
                "_".join(rng.choices(vocabulary, k=rng.randint(1, 2))),
                " ".join(rng.choices(vocabulary, k=rng.randint(0, 4))) + ".",
            )
            for _ in range(rng.randint(2, 30))
        ]
        for word in vocabulary:
            exact = {i for i, (name, text) in enumerate(pairs) if word in words(f"{name} {text}")}
            ranked = list(index(pairs).rank(word, len(pairs)).positions)
            # every tool that holds the word itself comes before every one that does not
            assert set(ranked[: len(exact)]) == exact, (word, pairs)


def test_keywords_find_a_tool_and_count_as_a_word_of_its_description() -> None:
    found = [
        Tool(name="ping", description="Checks the line.", input_schema={}),
        Tool(
            name="create_message",
            description="POST it.",
            input_schema={},
            keywords=("/channels/{channel_id}/messages", "Channels"),
        ),
        Tool(name="list_channels", description="Lists them.", input_schema={}),
        Tool(name="archive", description="Archives a channel.", input_schema={}),
    ]
    hits = SearchIndex(found).rank("channel", 5)
    # a word of the name first; then the keywords' as the description's
    assert hits.positions[0] == 2
    assert sorted(hits.positions[1:]) == [1, 3]
    assert SearchIndex(found, keyword_weight=0).rank("channel", 5).positions == (2, 3)


def test_the_keywords_give_at_most_a_bounded_number_of_words() -> None:
    long = Tool(name="a", description="A.", input_schema={}, keywords=("zebra " * 10_000, "yak"))
    built = SearchIndex([long])
    assert built.rank("zebra", 5).positions == (0,)
    assert built.rank("yak", 5).positions == ()


def test_a_description_s_first_paragraph_counts_more_when_it_has_several() -> None:
    assert summary("Upload file\n\nUploads a small file. See also sessions.") == "Upload file"
    assert summary(" One paragraph only. ") == ""
    pairs = [
        ("post_a", "Copy file\n\nCopies a file; to upload one, see sessions."),
        ("post_b", "Upload file\n\nSends a small file's bytes; past 50MB see sessions."),
    ]
    assert names(pairs, "upload") == ["post_b", "post_a"]
    found = [Tool(name=name, description=text, input_schema={}) for name, text in pairs]
    assert SearchIndex(found, summary_weight=0).rank("upload", 5).positions == (0, 1)


def test_annotations_say_the_kind_of_a_tool() -> None:
    assert tool_kind(Annotations(read_only=True, destructive=True)) == ("read",)
    assert tool_kind(Annotations(destructive=True)) == ("delete",)
    assert tool_kind(Annotations(idempotent=False)) == ("create",)
    assert tool_kind(Annotations(read_only=False, idempotent=True)) == ()
    assert tool_kind(Annotations()) == ()


MESSAGES = [
    Tool(name="message_a", description="A message.", input_schema={}, annotations=hints)
    for hints in (
        Annotations(),
        Annotations(read_only=True),
        Annotations(destructive=True),
        Annotations(idempotent=False),
    )
]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("a message", 0),
        ("who sent this message", 1),
        ("show the message", 1),
        ("erase a message", 2),
        ("send a message", 3),
        ("uploading messages", 3),
    ],
)
def test_the_query_s_intent_words_favour_the_tools_of_that_kind(query: str, first: int) -> None:
    hits = SearchIndex(MESSAGES).rank(query, 5)
    assert hits.positions[0] == first
    assert hits.matched == 4
    assert SearchIndex(MESSAGES, kind_weight=0).rank(query, 5).positions[0] == 0


def test_a_kind_alone_makes_no_tool_match() -> None:
    built = SearchIndex([*MESSAGES, Tool(name="zebra", description="Z.", input_schema={})])
    assert built.rank("show the zebra", 5) == (((4,), 1))
    assert built.rank("show", 5).matched == 0
    assert built.rank("show", 5).positions == ()


def test_the_best_tools_are_those_scoring_every_tool_would_give_ties_in_catalog_order() -> None:
    rng = random.Random(4321)
    pairs = [
        (
            "_".join(rng.choices(_VOCABULARY, k=rng.randint(1, 4))),
            " ".join(rng.choices(_VOCABULARY, k=rng.randint(0, 40))),
        )
        for _ in range(1500)
    ]
    built = index(pairs)
    for _ in range(300):
        query = " ".join(rng.choices(_VOCABULARY, k=rng.randint(1, 4)))
        rows = built.terms(query)
        limit = rng.choice((1, 5))
        finding = [row for row in rows if row.finds]
        found = {doc for row in finding for doc in row.scores}
        scores = {doc: sum(row.scores.get(doc, 0.0) for row in rows) for doc in found}
        expected = sorted(found, key=lambda doc: (-scores[doc], doc))[:limit]
        hits = built.rank(query, limit)
        assert (list(hits.positions), hits.matched) == (expected, len(found))


@pytest.mark.parametrize("option", ["prefix_factor", "related_factor"])
@pytest.mark.parametrize("factor", [-0.5, 1.5])
def test_a_form_may_not_score_more_than_the_word_itself(option: str, factor: float) -> None:
    with pytest.raises(ValueError, match=f"{option} must be from 0 to 1"):
        SearchIndex(MESSAGES, **{option: factor})
