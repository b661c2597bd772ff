"""What the adapters share: what runs a model's tool calls, and reading the SDKs' objects."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

import anyio

from amends_toolkit._errors import Failure
from amends_toolkit._json import JsonRefused, JsonValue, loads
from amends_toolkit.adapters._schemas import source_input
from amends_toolkit.runtime import Session, Toolkit

__all__ = (
    "NOT_OURS",
    "ModelDump",
    "PendingCall",
    "ToolCallLike",
    "ToolCaller",
    "arguments",
    "content_of",
    "is_failure",
    "needs_approval",
    "read",
    "run_all",
    "text_field",
    "with_source_names",
)


@runtime_checkable
class ToolCaller(Protocol):
    """What runs a model's tool calls: an :class:`~amends_toolkit.Toolkit` (asks no approval)
    or an :class:`~amends_toolkit.Session` (asks approval, shows errors to the host, times out)."""

    async def call(self, name: str, input: JsonValue) -> JsonValue:
        """Run a tool; a failure is a result."""
        ...


@runtime_checkable
class ModelDump(Protocol):
    """A pydantic model, as the ``openai`` and ``anthropic`` SDKs give a response's parts."""

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]:
        """The model as JSON data."""
        ...


ToolCallLike: TypeAlias = Mapping[str, object] | ModelDump
"""A part of a model's response as its SDK gives it, or as a dict of the API's JSON."""

PendingCall: TypeAlias = tuple[str, JsonValue | Failure]
"""A tool's name and its input, or the failure the model reads in place of running it."""


def read(item: ToolCallLike) -> Mapping[str, object]:
    """The JSON of an SDK object, or the mapping itself.

    Raises:
        TypeError: the item is neither.
    """
    if isinstance(item, Mapping):
        return item
    if isinstance(item, ModelDump):
        return item.model_dump(mode="json")
    raise TypeError(f"expected a dict or an SDK model of a tool call, not {type(item).__name__}")


def text_field(item: Mapping[str, object], key: str, kind: str) -> str:
    """A string field that the API always sends with this kind of item.

    Raises:
        ValueError: it is missing or no string.
    """
    value = item.get(key)
    if not isinstance(value, str):
        raise ValueError(f"a {kind} needs a string {key!r}, got {value!r}")
    return value


def arguments(text: object) -> JsonValue | Failure:
    """A model's arguments text read as JSON, or the failure the model reads when it is none."""
    if text is None or text == "":
        return {}
    if not isinstance(text, str):
        return Failure(code="InvalidInputError", message="The arguments must be JSON text.")
    try:
        return loads(text)
    except JsonRefused as error:
        return Failure(
            code="InvalidInputError", message=f"The arguments are not valid JSON: {error}."
        )


def with_source_names(caller: ToolCaller, name: str, input: JsonValue) -> JsonValue:
    """A model's input given back the property names the tool's schema declares, where the
    adapter gave the model other names (see ``_schemas``). Over a caller that is neither a
    toolkit nor a session, the input is as the model gave it."""
    toolkit = caller.toolkit if isinstance(caller, Session) else caller
    if isinstance(toolkit, Toolkit) and name in toolkit:
        return source_input(toolkit.tools[name].input_schema, input)
    return input


def needs_approval(toolkit: Toolkit, name: str, input: JsonValue) -> bool:
    """Whether a call waits for a person before it runs: the tool needs approval for this
    input, which its schema takes. A call of no tool, or with an input the schema refuses, fails
    unasked (nothing runs), as in a Session."""
    if name not in toolkit:
        return False
    entry = toolkit.entry(name)
    if entry.tool.needs_approval is False or entry.check(input) is not None:
        return False
    assert isinstance(input, dict)  # check() refuses anything but an object
    return entry.tool.requires_approval(input)


async def run_all(caller: ToolCaller, calls: Sequence[PendingCall]) -> list[JsonValue]:
    """Run calls concurrently and give their results in the calls' order, each input given
    back its tool's property names first.

    Cancellation cancels every call; a failure is a result, so no call ends the others.
    """
    results: list[JsonValue] = [None] * len(calls)

    async def run(index: int, name: str, input: JsonValue | Failure) -> None:
        if isinstance(input, Failure):
            results[index] = input.to_json()
        else:
            results[index] = await caller.call(name, with_source_names(caller, name, input))

    if len(calls) == 1:
        await run(0, *calls[0])
        return results
    async with anyio.create_task_group() as tasks:
        for index, (name, input) in enumerate(calls):
            tasks.start_soon(run, index, name, input)
    return results


def content_of(value: JsonValue) -> str:
    """A result as the text a model API takes: a string as it is, any other JSON as JSON text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def is_failure(value: JsonValue) -> bool:
    """Whether a result is a Failure's JSON."""
    return Failure.from_json(value) is not None


NOT_OURS = Failure(code="NotFoundError", message="There is no such tool.")
"""What the model reads of a call of a kind of tool the toolkit never offered."""
