"""A hostile model's code in code mode (Monty): what it sends is bounded, the CPU work it makes
runs off the event loop, runaway runs leave workers to others, and the sandbox holds."""

from __future__ import annotations

import json

import anyio
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.presentations import CodeTools, Finished, Paused
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

pytest.importorskip("pydantic_monty")

pytestmark = pytest.mark.anyio

PATH: JsonObject = {
    "type": "object",
    "properties": {"path": {"type": "string", "maxLength": 5}},
    "required": ["path"],
    "additionalProperties": False,
}


class Deleting:
    """``delete`` (needs approval, its path at most 5 characters); every run recorded."""

    def __init__(self, schema: JsonObject = PATH) -> None:
        self.ran: list[JsonValue] = []
        self.schema = schema

    async def delete(self, input: JsonObject) -> JsonValue:
        self.ran.append(input)
        return {"deleted": input["path"]}

    def tools(self) -> CodeTools:
        tool = Tool(name="delete", description="", input_schema=self.schema, needs_approval=True)
        entry = ToolEntry(tool=tool, handler=self.delete)
        return CodeTools(Toolkit.from_entries([entry]), approval="ask")


DELETE = """
try:
    return await tools.delete({"path": "a.txt"})
except ToolError as error:
    return str(error)
"""


async def paused_delete(tools: CodeTools) -> Paused:
    async with at.MontyRuntime(max_processes=1) as runtime:
        paused = await runtime.start(DELETE, tools.names, tools.call, approval=tools)
    assert isinstance(paused, Paused)
    assert [(call.name, call.input) for call in paused.calls] == [("delete", {"path": "a.txt"})]
    return paused


def tampered(paused: Paused, input: JsonValue) -> Paused:
    head, _, snapshot = paused.dump().partition(b"\n")
    data = json.loads(head)
    data["calls"][0][2] = input
    return Paused.load(json.dumps(data).encode() + b"\n" + snapshot)


@pytest.mark.parametrize(
    "how", ["bytes edited while kept", "the tool's schema tightened before the resume"]
)
async def test_a_resumed_call_is_checked_against_the_tools_schema_as_a_first_call_is(
    how: str,
) -> None:
    if how == "bytes edited while kept":
        files = Deleting()
        paused = tampered(await paused_delete(files.tools()), {"path": "../../etc", "all": True})
    else:  # paused over a catalog that took any path; resumed over one that takes 5 characters
        paused = await paused_delete(Deleting({"type": "object"}).tools())
        files = Deleting({**PATH, "properties": {"path": {"type": "string", "maxLength": 3}}})
    tools = files.tools()
    answer = await tools.answer(paused.calls[0], approved=True)  # a person approved
    assert isinstance(answer, at.presentations.ToolError)
    assert answer.code == "InvalidInputError"
    async with at.MontyRuntime(max_processes=1) as runtime:
        done = await runtime.resume(paused, [answer], tools.call, approval=tools)
    assert isinstance(done, Finished)
    assert isinstance(done.value, str)
    assert done.value.startswith("InvalidInputError: The input does not match the tool's parameters")
    assert files.ran == []  # the tool never saw the input its schema refuses


async def test_a_resumed_call_of_a_name_the_code_may_not_call_is_not_found() -> None:
    files = Deleting()
    paused = await paused_delete(files.tools())
    head, _, snapshot = paused.dump().partition(b"\n")
    data = json.loads(head)
    data["calls"][0][1] = "drop_everything"
    other = Paused.load(json.dumps(data).encode() + b"\n" + snapshot)
    answer = await files.tools().answer(other.calls[0], approved=True)
    assert isinstance(answer, at.presentations.ToolError)
    assert answer.code == "NotFoundError"
    assert files.ran == []


async def test_a_resumed_call_with_a_valid_input_runs() -> None:
    files = Deleting()
    tools = files.tools()
    paused = await paused_delete(tools)
    answer = await tools.answer(paused.calls[0], approved=True)
    assert answer == {"deleted": "a.txt"}
    assert files.ran == [{"path": "a.txt"}]


