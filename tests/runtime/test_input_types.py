"""A host's inputs are typed as it holds them: ``mypy --strict`` (which runs over this file)
takes a ``dict[str, str]`` or a ``dict[str, list[str]]`` where a tool's input goes, and each
runs."""

from __future__ import annotations

import pytest

import amends_toolkit as at

from .sources import Scripted


def allow(source: str, definition: at.ToolDefinition) -> at.Decision:
    return "allow"


@pytest.mark.anyio
async def test_a_dict_of_strings_is_an_input_for_every_way_of_calling() -> None:
    source = Scripted("s")
    toolkit = at.assemble([at.Member(source, await source.discover())], allow)
    text: dict[str, str] = {"text": "hi"}
    assert await toolkit.call("s__echo", text) == {"text": "hi"}
    assert (await toolkit.invoke("s__echo", text)).value == {"text": "hi"}
    assert await at.presentation.call(toolkit, "s__echo", text) == {"text": "hi"}
    async with at.Session(toolkit, approve=lambda name, input: True) as session:
        assert await session.call("s__echo", text) == {"text": "hi"}
        assert (await session.invoke("s__echo", text)).value == {"text": "hi"}


@pytest.mark.anyio
async def test_nested_containers_type_and_are_checked_as_json() -> None:
    source = Scripted("s")
    toolkit = at.assemble([at.Member(source, await source.discover())], allow)
    words: dict[str, list[str]] = {"text": ["not", "a", "string"]}
    failure = at.Failure.from_json(await toolkit.call("s__echo", words))
    assert failure is not None
    assert failure.code == "InvalidInputError"
    # What is not a dict is no JSON object a model could send: refused, not run.
    frozen: tuple[str, ...] = ("text",)
    refused = at.Failure.from_json(await toolkit.call("s__echo", frozen))
    assert refused is not None
    assert refused.code == "InvalidInputError"
    assert source.calls == []
