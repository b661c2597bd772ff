from __future__ import annotations

from typing import cast

import attrs
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

from .sources import ID, Recording, allow_all, define

pytestmark = pytest.mark.anyio


def many(count: int) -> at.Toolkit:
    """``count`` tools of one source, each about notes, in catalog order."""
    source = Recording("notes")
    return at.assemble(
        [at.Member(source, [define(f"note_{i}", "Read a note.") for i in range(count)])],
        allow_all,
    )


def pets() -> tuple[at.Toolkit, Recording]:
    source = Recording("zoo")
    definitions = [
        define("list_pets", "List every pet in the store."),
        define("createPet", "Add a new pet to the store."),
        define("delete-pet", "Remove a pet from the store for good.", ID),
        define("send_sms", "Send a text message to a phone number."),
    ]
    return at.assemble([at.Member(source, definitions)], allow_all), source


async def search(toolkit: at.Toolkit, input: JsonValue) -> JsonObject:
    answer = await toolkit.call("tool_search", input)
    assert isinstance(answer, dict), answer
    return answer


def found(answer: JsonObject) -> list[str]:
    tools = cast("list[JsonObject]", answer["tools"])
    return [cast("str", tool["name"]) for tool in tools]


def test_the_presented_toolkit_has_two_tools() -> None:
    toolkit, _ = pets()
    presented = at.tool_search(toolkit)
    assert list(presented.tools) == ["tool_search", "tool_call"]
    assert presented.tools["tool_search"].needs_approval is False


async def test_a_search_gives_each_match_with_its_name_description_and_schema() -> None:
    toolkit, _ = pets()
    answer = await search(at.tool_search(toolkit), {"query": "remove a pet"})
    tools = cast("list[JsonObject]", answer["tools"])
    assert tools[0] == {
        "name": "zoo__delete-pet",
        "description": "Remove a pet from the store for good.",
        "inputSchema": ID,
    }


async def test_a_search_says_how_many_matched_and_how_many_there_are() -> None:
    toolkit, _ = pets()
    answer = await search(at.tool_search(toolkit), {"query": "pet"})
    assert answer["available"] == 4
    assert answer["matched"] == 3
    assert set(found(answer)) == {"zoo__list_pets", "zoo__createPet", "zoo__delete-pet"}


async def test_a_tool_that_scores_nothing_does_not_match() -> None:
    toolkit, _ = pets()
    answer = await search(at.tool_search(toolkit), {"query": "zebra"})
    assert answer == {"tools": [], "matched": 0, "available": 4}


async def test_a_query_with_no_words_lists_the_tools_in_order() -> None:
    answer = await search(at.tool_search(many(8)), {"query": ""})
    assert found(answer) == [f"notes__note_{i}" for i in range(5)]
    assert answer["matched"] == 8
    assert answer["available"] == 8


async def test_matches_are_ordered_best_first_with_ties_in_catalog_order() -> None:
    toolkit, _ = pets()
    answer = await search(at.tool_search(toolkit), {"query": "send a text message"})
    assert found(answer)[0] == "zoo__send_sms"
    tied = await search(at.tool_search(many(8)), {"query": "read a note"})
    assert found(tied) == [f"notes__note_{i}" for i in range(5)]


async def test_a_search_gives_five_tools_unless_it_asks_for_more() -> None:
    presented = at.tool_search(many(30))
    default = await search(presented, {"query": "note"})
    assert len(found(default)) == 5
    assert default["matched"] == 30
    assert len(found(await search(presented, {"query": "note", "limit": 12}))) == 12
    assert len(found(await search(presented, {"query": "note", "limit": 20}))) == 20
    assert len(found(await search(presented, {"query": "note", "limit": 1}))) == 1


async def test_the_limit_option_changes_the_default_of_five() -> None:
    presented = at.tool_search(many(30), limit=8)
    assert len(found(await search(presented, {"query": "note"}))) == 8
    assert len(found(await search(presented, {"query": "note", "limit": 3}))) == 3
    limit = cast("JsonObject", presented.tools["tool_search"].input_schema["properties"])["limit"]
    assert "8 unless given" in cast("JsonObject", limit)["description"]  # type: ignore[operator]


@pytest.mark.parametrize("limit", [21, 0, -1, 2.5, "5"])
async def test_the_schema_refuses_a_limit_past_twenty_or_not_a_count(limit: JsonValue) -> None:
    answer = await at.tool_search(many(30)).call("tool_search", {"query": "note", "limit": limit})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "InvalidInputError"


def test_the_schema_allows_limit_up_to_twenty() -> None:
    schema = at.tool_search(many(1)).tools["tool_search"].input_schema
    properties = cast("JsonObject", schema["properties"])
    assert properties["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 20,
        "description": "How many tools to give at most (5 unless given).",
    }
    assert schema["required"] == ["query"]


@pytest.mark.parametrize("limit", [0, 21, True, 2.0])
def test_a_limit_option_outside_one_to_twenty_is_refused_when_presenting(limit: int) -> None:
    with pytest.raises(ValueError, match="from 1 to 20"):
        at.tool_search(many(1), limit=limit)


async def test_a_search_without_a_query_is_refused_by_the_schema() -> None:
    answer = await at.tool_search(many(3)).call("tool_search", {"limit": 3})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "InvalidInputError"


async def test_tool_call_runs_the_tool_as_a_direct_call_would() -> None:
    toolkit, source = pets()
    presented = at.tool_search(toolkit)
    direct = await toolkit.call("zoo__delete-pet", {"id": 3})
    through = await presented.call("tool_call", {"name": "zoo__delete-pet", "input": {"id": 3}})
    assert through == direct == {"tool": "delete-pet", "input": {"id": 3}}
    assert source.calls == [("delete-pet", {"id": 3}), ("delete-pet", {"id": 3})]


async def test_tool_call_checks_the_input_against_the_tools_schema() -> None:
    toolkit, source = pets()
    presented = at.tool_search(toolkit)
    answer = await presented.call("tool_call", {"name": "zoo__delete-pet", "input": {"id": "x"}})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "InvalidInputError"
    assert answer == await toolkit.call("zoo__delete-pet", {"id": "x"})
    assert source.calls == []


async def test_a_name_that_is_no_tool_is_not_found() -> None:
    toolkit, _ = pets()
    answer = await at.tool_search(toolkit).call("tool_call", {"name": "zoo__nope", "input": {}})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "NotFoundError"


async def test_the_presented_tools_own_names_are_not_tools_to_call() -> None:
    toolkit, _ = pets()
    presented = at.tool_search(toolkit)
    answer = await presented.call("tool_call", {"name": "tool_search", "input": {"query": "x"}})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "NotFoundError"


async def test_a_failure_of_the_tool_is_a_result_and_keeps_the_error_behind_it() -> None:
    async def refuse(input: JsonObject) -> JsonValue:
        raise at.AuthenticationError(source="pets", message="401 from https://pets.example")

    source = Recording("pets", {"list_pets": refuse})
    toolkit = at.assemble([at.Member(source, [define("list_pets")])], allow_all)
    result = await at.tool_search(toolkit).invoke(
        "tool_call", {"name": "pets__list_pets", "input": {}}
    )
    assert result.failure == at.AuthenticationError(source="pets").to_failure()
    assert isinstance(result.error, at.AuthenticationError)
    assert "example" not in str(result.value)


async def test_a_defect_of_the_tool_reads_as_the_source_failed() -> None:
    async def broken(input: JsonObject) -> JsonValue:
        raise RuntimeError("bug")

    source = Recording("pets", {"list_pets": broken})
    toolkit = at.assemble([at.Member(source, [define("list_pets")])], allow_all)
    answer = await at.tool_search(toolkit).call(
        "tool_call", {"name": "pets__list_pets", "input": {}}
    )
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "UnknownError"


async def test_a_blocked_tool_can_be_neither_found_nor_called() -> None:
    source = Recording("pets")
    toolkit = at.assemble(
        [at.Member(source, [define("list_pets", "List pets."), define("delete_pet", "Delete.")])],
        lambda _, d: "block" if d.name == "delete_pet" else "allow",
    )
    presented = at.tool_search(toolkit)
    everything = await search(presented, {"query": "", "limit": 20})
    assert found(everything) == ["pets__list_pets"]
    assert everything["available"] == 1
    assert (await search(presented, {"query": "delete pet"}))["matched"] == 1
    assert "pets__delete_pet" not in found(await search(presented, {"query": "delete pet"}))
    answer = await presented.call("tool_call", {"name": "pets__delete_pet", "input": {}})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "NotFoundError"
    assert source.calls == []


def approval_toolkit(source: Recording) -> at.Toolkit:
    decisions: dict[str, at.Decision] = {"read": "allow", "write": "approve"}
    return at.assemble(
        [at.Member(source, [define("read"), define("write", schema=ID)])],
        lambda _, d: decisions[d.name],
    )


class Person:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, JsonObject]] = []

    async def __call__(self, name: str, input: JsonObject) -> bool:
        self.asked.append((name, input))
        return self.answer


async def test_a_tool_that_needs_approval_needs_it_through_tool_call() -> None:
    source = Recording("db")
    presented = at.tool_search(approval_toolkit(source))
    person = Person(answer=True)
    call: JsonObject = {"name": "db__write", "input": {"id": 1}}
    async with at.Session(presented, approve=person) as session:
        answer = await session.call("tool_call", call)
    assert answer == {"tool": "write", "input": {"id": 1}}
    assert person.asked == [("tool_call", call)]
    assert source.calls == [("write", {"id": 1})]


async def test_a_refused_approval_through_tool_call_runs_nothing() -> None:
    source = Recording("db")
    presented = at.tool_search(approval_toolkit(source))
    async with at.Session(presented, approve=Person(answer=False)) as session:
        answer = await session.call("tool_call", {"name": "db__write", "input": {"id": 1}})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "ApprovalDenied"
    assert source.calls == []


async def test_tool_call_asks_no_approval_for_a_tool_that_needs_none_nor_does_search() -> None:
    source = Recording("db")
    presented = at.tool_search(approval_toolkit(source))
    person = Person(answer=False)
    async with at.Session(presented, approve=person) as session:
        assert await session.call("tool_call", {"name": "db__read", "input": {}}) == {
            "tool": "read",
            "input": {},
        }
        await session.call("tool_search", {"query": "write"})
    assert person.asked == []


def test_approval_is_asked_about_the_input_the_model_gave() -> None:
    source = Recording("db")
    toolkit = at.assemble([at.Member(source, [define("write", schema=ID)])], lambda _, d: "approve")
    asked: list[JsonObject] = []

    def only_big(input: JsonObject) -> bool:
        asked.append(input)
        return cast("int", input["id"]) > 100

    entry = toolkit.entry("db__write")
    gated = at.Toolkit.from_entries(
        [
            at.ToolEntry(
                tool=at.Tool(
                    name="write", description="w", input_schema=ID, needs_approval=only_big
                ),
                handler=entry.handler,
            )
        ]
    )
    needs = at.tool_search(gated).tools["tool_call"]
    assert needs.requires_approval({"name": "write", "input": {"id": 500}}) is True
    assert needs.requires_approval({"name": "write", "input": {"id": 5}}) is False
    assert asked == [{"id": 500}, {"id": 5}]
    # an input the tool refuses, or a name that is no tool, runs nothing: nothing to approve
    assert needs.requires_approval({"name": "write", "input": {"id": "x"}}) is False
    assert needs.requires_approval({"name": "nope", "input": {}}) is False
    assert asked == [{"id": 500}, {"id": 5}]


def test_tool_call_needs_no_approval_when_no_tool_does() -> None:
    toolkit, _ = pets()
    assert at.tool_search(toolkit).tools["tool_call"].needs_approval is False


def test_neither_tool_is_sent_in_strict_mode() -> None:
    toolkit, _ = pets()
    for tool in at.adapters.openai_tools(at.tool_search(toolkit)):
        assert cast("JsonObject", tool["function"])["strict"] is False


async def test_a_presented_toolkit_can_be_presented_again() -> None:
    toolkit, _ = pets()
    twice = at.tool_search(at.tool_search(toolkit))
    answer = await twice.call(
        "tool_call",
        {"name": "tool_call", "input": {"name": "zoo__list_pets", "input": {}}},
    )
    assert answer == {"tool": "list_pets", "input": {}}


class Reversed:
    """A deterministic ranker a host might bring: every tool matches, the last first."""

    def __init__(self, tools: list[at.Tool]) -> None:
        self.tools = tools
        self.queries: list[tuple[str, int]] = []

    def rank(self, query: str, limit: int) -> tuple[list[int], int]:
        self.queries.append((query, limit))
        return list(range(len(self.tools) - 1, -1, -1))[:limit], len(self.tools)


async def test_a_host_ranker_ranks_the_tools_by_their_positions() -> None:
    toolkit, _ = pets()
    ranker = Reversed(list(toolkit.tools.values()))
    answer = await search(at.tool_search(toolkit, ranker=ranker), {"query": "a pet", "limit": 2})
    assert found(answer) == ["zoo__send_sms", "zoo__delete-pet"]
    assert answer["matched"] == 4
    assert answer["available"] == 4
    assert ranker.queries == [("a pet", 2)]


async def test_a_host_ranker_gives_no_more_tools_than_the_search_asked_for() -> None:
    toolkit, _ = pets()

    class Everything(Reversed):
        def rank(self, query: str, limit: int) -> tuple[list[int], int]:
            return [0, 1, 2, 3], 4

    presented = at.tool_search(toolkit, ranker=Everything(list(toolkit.tools.values())))
    assert found(await search(presented, {"query": "pet", "limit": 3})) == [
        "zoo__list_pets",
        "zoo__createPet",
        "zoo__delete-pet",
    ]


@pytest.mark.parametrize("position", [4, -1])
async def test_a_ranker_position_that_is_no_tool_fails_the_search(position: int) -> None:
    toolkit, _ = pets()

    class Broken(Reversed):
        def rank(self, query: str, limit: int) -> tuple[list[int], int]:
            return [position], 1

    answer = await at.tool_search(toolkit, ranker=Broken([])).call("tool_search", {"query": "pet"})
    failure = at.Failure.from_json(answer)
    assert failure is not None
    assert failure.code == "UnknownError"


async def test_the_built_in_ranker_reads_the_tools_parameters() -> None:
    source = Recording("mail")
    definitions = [
        define("send", "Send it.", {"type": "object", "properties": {"recipient": {}}}),
        define("ping", "Check the line."),
    ]
    toolkit = at.assemble([at.Member(source, definitions)], allow_all)
    assert found(await search(at.tool_search(toolkit), {"query": "recipient"})) == ["mail__send"]


async def test_the_built_in_ranker_reads_keywords_and_annotations_the_model_is_not_shown() -> None:
    source = Recording("chat")
    definitions = [
        attrs.evolve(define(name, "A message."), annotations=hints, keywords=keywords)
        for name, hints, keywords in (
            ("get_message", at.Annotations(read_only=True), ("/channels/{id}/messages/{m}",)),
            ("create_message", at.Annotations(idempotent=False), ("/channels/{id}/messages",)),
            ("delete_message", at.Annotations(destructive=True), ("/messages/{m}",)),
        )
    ]
    toolkit = at.assemble([at.Member(source, definitions)], allow_all)
    assert toolkit.tools["chat__create_message"].keywords == ("/channels/{id}/messages",)
    presented = at.tool_search(toolkit)
    answer = await search(presented, {"query": "send a message to a channel"})
    assert found(answer) == ["chat__create_message", "chat__get_message", "chat__delete_message"]
    assert (
        found(await search(presented, {"query": "who wrote this message"}))[0]
        == "chat__get_message"
    )
    # what the model reads of a tool: its name, description and schema, never its keywords
    tools = cast("list[JsonObject]", answer["tools"])
    assert set(tools[0]) == {"name", "description", "inputSchema"}
    assert "channels" not in str(answer)


async def test_a_search_for_a_word_ranks_the_tools_named_by_it_above_a_shorter_word_s() -> None:
    # issue 32, item 8: "report" found github__delete_repo first, "repo" being rarer
    reports = Recording("reports")
    github = Recording("github")
    toolkit = at.assemble(
        [
            at.Member(reports, [define(f"report_{i:02}", "A report.") for i in range(12)]),
            at.Member(
                github,
                [
                    define(name, text)
                    for name, text in (
                        ("delete_repo", "Delete a repository."),
                        ("create_repo", "Create a repository."),
                        ("list_issues", "List a repository's issues."),
                        ("create_issue", "Open an issue."),
                        ("get_user", "Read a user."),
                    )
                ],
            ),
        ],
        allow_all,
    )
    answer = await search(at.tool_search(toolkit), {"query": "report", "limit": 20})
    assert found(answer) == [f"reports__report_{i:02}" for i in range(12)]
    assert answer["matched"] == 12
