from __future__ import annotations

import logging

import anyio
import attrs
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._errors import REASONS
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit, ToolResult, validator_for

from .toolkit_sources import CLOSED, Gate, Recording, Untouchable, allow_all, define, raising

pytestmark = pytest.mark.anyio

SECRET = "https://user:hunter2@internal.example:8443/v1"


def one_tool(source: at.ToolSource, schema: JsonObject | None = None) -> Toolkit:
    return at.assemble([at.Member(source, [define("tool", schema)])], allow_all)


def failure(code: str, message: str, retryable: bool = False) -> JsonValue:
    return {"isFailure": True, "code": code, "message": message, "retryable": retryable}


async def test_a_call_returns_the_json_the_source_answers() -> None:
    toolkit = one_tool(Recording("s"))
    assert await toolkit.call("s__tool", {"a": [1, 2.5, None, True]}) == {
        "source": "s",
        "tool": "tool",
        "input": {"a": [1, 2.5, None, True]},
    }


async def test_the_source_gets_the_input_as_the_model_gave_it() -> None:
    source = Recording("s")
    given: JsonObject = {"id": 7, "note": "n"}
    await one_tool(source, CLOSED).call("s__tool", given)
    assert source.calls[0][1] is given


async def test_a_tool_that_gives_nothing_gives_null() -> None:
    async def nothing(input: JsonObject) -> JsonValue:
        return None

    toolkit = one_tool(Recording("s", {"tool": nothing}))
    result = await toolkit.invoke("s__tool", {})
    assert result == ToolResult(value=None)
    assert result.ok


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"id": 1, "extra": True}, "'extra' was unexpected"),
        ({"note": "no id"}, '"id" is a required property'),
        ({"id": "one"}, 'at \'id\': "one" is not of type "integer"'),
        ([1, 2], "must be a JSON object, not an array"),
        ("text", "must be a JSON object, not a string"),
        (None, "must be a JSON object, not null"),
        (3, "must be a JSON object, not a number"),
    ],
)
async def test_a_refused_input_is_a_result_and_the_source_never_sees_it(
    given: JsonValue, says: str
) -> None:
    source = Recording("s")
    result = await one_tool(source, CLOSED).invoke("s__tool", given)
    assert result.failure is not None
    assert result.failure.code == "InvalidInputError"
    assert says in result.failure.message
    assert result.value == result.failure.to_json()
    assert result.error is None
    assert source.calls == []


async def test_an_open_schema_takes_any_object_but_nothing_else() -> None:
    source = Recording("s")
    toolkit = one_tool(source)
    assert not at.Failure.from_json(await toolkit.call("s__tool", {"anything": {"at": "all"}}))
    refusal = at.Failure.from_json(await toolkit.call("s__tool", ["not", "an", "object"]))
    assert refusal is not None
    assert refusal.code == "InvalidInputError"
    assert len(source.calls) == 1


async def test_an_unknown_name_is_a_not_found_result() -> None:
    toolkit = one_tool(Untouchable("s"))
    assert await toolkit.call("s__other", {}) == failure("NotFoundError", "There is no such tool.")
    assert await toolkit.call("tool", {}) == failure(
        "NotFoundError", "There is no such tool. Did you mean s__tool?"
    )
    assert await toolkit.call("S__TOOL", {}) == failure(
        "NotFoundError", "There is no such tool. Did you mean s__tool?"
    )


@pytest.mark.parametrize("reason", sorted(REASONS))
async def test_every_reason_becomes_its_failure_json(reason: str) -> None:
    error = REASONS[reason](source="s", message=f"refused by {SECRET}")
    toolkit = one_tool(Recording("s", {"tool": raising(error)}))
    result = await toolkit.invoke("s__tool", {})
    assert result.value == error.to_failure().to_json()
    assert result.error is error
    value = result.value
    assert isinstance(value, dict)
    assert value["code"] == reason
    assert value["retryable"] is (reason == "UnavailableError")
    if reason in ("InvalidInputError", "CallFailedError"):
        assert value["message"] == f"refused by {SECRET}"  # written for the model by the source
    else:
        assert value["message"] == REASONS[reason].default_message
        assert "hunter2" not in str(value)


async def test_a_failure_a_handler_raises_is_read_as_it_is() -> None:
    async def handler(input: JsonObject) -> JsonValue:
        raise at.Failure(code="CallFailedError", message="no such row", retryable=False)

    entry = ToolEntry(tool=Tool(name="t", description="", input_schema={}), handler=handler)
    result = await Toolkit.from_entries([entry]).invoke("t", {})
    assert result.value == failure("CallFailedError", "no such row")
    assert result.error is None


async def test_a_defect_is_logged_and_read_as_the_source_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    defect = ZeroDivisionError("a bug")
    toolkit = one_tool(Recording("s", {"tool": raising(defect)}))
    with caplog.at_level(logging.ERROR, logger="amends_toolkit"):
        result = await toolkit.invoke("s__tool", {})
    assert result.value == failure("UnknownError", "The tool source failed.")
    assert isinstance(result.error, at.UnknownError)
    assert result.error.source == "s"
    assert result.error.__cause__ is defect
    [record] = [r for r in caplog.records if "call.defect" in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert record.exc_info[1] is defect


async def test_a_cancelled_call_gives_no_result_and_cancels_the_source_call() -> None:
    gate = Gate()
    source = Recording("s", {"tool": gate})
    toolkit = one_tool(source)
    results: list[JsonValue] = []

    async def run() -> None:
        results.append(await toolkit.call("s__tool", {}))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        await gate.started.wait()
        tasks.cancel_scope.cancel()
    assert gate.cancelled == 1
    assert results == []


async def test_calls_run_together_each_with_its_own_answer() -> None:
    gates = {name: Gate(answer=name) for name in ("a", "b")}
    toolkit = at.assemble(
        [at.Member(Recording("s", dict(gates)), [define("a"), define("b")])], allow_all
    )
    answers: dict[str, JsonValue] = {}

    async def run(name: str) -> None:
        answers[name] = await toolkit.call(f"s__{name}", {})

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run, "a")
        tasks.start_soon(run, "b")
        await gates["a"].started.wait()
        await gates["b"].started.wait()
        gates["b"].release.set()
        gates["a"].release.set()
    assert answers == {"a": "a", "b": "b"}


def test_a_toolkit_cannot_be_changed() -> None:
    toolkit = one_tool(Recording("s"))
    with pytest.raises(TypeError):
        toolkit.tools["other"] = toolkit.tools["s__tool"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        toolkit.tools["s__tool"].name = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        toolkit.other = 1  # type: ignore[attr-defined]


async def test_validators_are_compiled_once_per_tool_and_shared_by_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[str] = []

    def counting(schema: JsonObject, *, tool: str = "") -> object:
        compiled.append(tool)
        return validator_for(schema, tool=tool)

    monkeypatch.setattr("amends_toolkit.runtime._tools.validator_for", counting)
    toolkit = at.assemble(
        [at.Member(Recording("s"), [define("a", CLOSED), define("b", CLOSED)])], allow_all
    )
    for _ in range(3):
        async with at.Session(toolkit, approve=lambda _, __: True) as session:
            await session.call("s__a", {"id": 1})
            await session.call("s__a", {"id": "bad"})
        await toolkit.call("s__a", {"id": 2})
    assert compiled == ["s__a"]
    await toolkit.call("s__b", {"id": 1})
    assert compiled == ["s__a", "s__b"]


async def test_a_source_toolkit_names_tools_as_the_source_does() -> None:
    source = Recording("tasks")
    toolkit = at.source_toolkit(source, [define("list.all"), define("get", CLOSED)])
    assert list(toolkit.tools) == ["list.all", "get"]
    assert toolkit.source_tool("get") == ("tasks", "get")
    assert all(tool.needs_approval is False for tool in toolkit.tools.values())
    assert await toolkit.call("list.all", {}) == {
        "source": "tasks",
        "tool": "list.all",
        "input": {},
    }
    refusal = at.Failure.from_json(await toolkit.call("get", {}))
    assert refusal is not None
    assert refusal.code == "InvalidInputError"
    assert source.calls == [("list.all", {})]


def test_a_source_toolkit_needs_distinct_names_and_contacts_nothing() -> None:
    at.source_toolkit(Untouchable("s"), [define("a"), define("b")])
    with pytest.raises(at.NameClash) as caught:
        at.source_toolkit(Untouchable("s"), [define("a"), define("a"), define("b")])
    assert caught.value.clashes == {"a": (("s", "a"), ("s", "a"))}


async def test_a_toolkit_of_handlers_checks_input_against_each_tool_schema() -> None:
    seen: list[JsonObject] = []

    async def handler(input: JsonObject) -> JsonValue:
        seen.append(input)
        return len(seen)

    entry = ToolEntry(tool=Tool(name="h", description="d", input_schema=CLOSED), handler=handler)
    toolkit = Toolkit.from_entries([entry])
    assert await toolkit.call("h", {"id": 1}) == 1
    assert at.Failure.from_json(await toolkit.call("h", {"id": 1, "x": 0})) is not None
    assert seen == [{"id": 1}]
    with pytest.raises(KeyError, match="reaches no source"):
        toolkit.source_tool("h")


async def test_tools_taken_from_toolkits_run_as_they_did_there() -> None:
    first = at.assemble(
        [at.Member(Recording("a"), [define("x", CLOSED), define("y")])],
        lambda _, d: "approve" if d.name == "y" else "allow",
    )
    second = at.assemble([at.Member(Recording("b"), [define("z")])], allow_all)
    merged = Toolkit.from_entries([first.entry("a__y"), *second.entries(), first.entry("a__x")])
    assert list(merged.tools) == ["a__y", "b__z", "a__x"]
    assert merged.tools["a__y"].needs_approval is True
    assert merged.source_tool("b__z") == ("b", "z")
    assert await merged.call("b__z", {"k": 1}) == await second.call("b__z", {"k": 1})
    assert await merged.call("a__x", {}) == await first.call("a__x", {})
    assert merged.entry("a__x") is first.entry("a__x")


def test_merging_toolkits_that_share_names_clashes() -> None:
    first = at.assemble([at.Member(Recording("a"), [define("x"), define("y")])], allow_all)
    again = at.assemble([at.Member(Recording("a"), [define("x"), define("y")])], allow_all)
    with pytest.raises(at.NameClash) as caught:
        Toolkit.from_entries([*first.entries(), *again.entries()])
    assert caught.value.clashes == {
        "a__x": (("a", "x"), ("a", "x")),
        "a__y": (("a", "y"), ("a", "y")),
    }


def test_one_entry_taken_twice_is_one_tool() -> None:
    first = at.assemble([at.Member(Recording("a"), [define("x"), define("y")])], allow_all)
    merged = Toolkit.from_entries([*first.entries(), first.entry("a__y")])
    assert list(merged.tools) == ["a__x", "a__y"]


async def test_a_renamed_entry_reaches_the_same_tool() -> None:
    source = Recording("a")
    first = at.assemble([at.Member(source, [define("x", CLOSED)])], allow_all)
    renamed = Toolkit.from_entries([first.entry("a__x").renamed("short")])
    assert list(renamed.tools) == ["short"]
    assert renamed.source_tool("short") == ("a", "x")
    await renamed.call("short", {"id": 3})
    assert source.calls == [("x", {"id": 3})]


async def test_an_entry_of_a_source_calls_it_by_its_route() -> None:
    source = Recording("a")
    entry = ToolEntry(
        tool=Tool(name="shown", description="", input_schema=CLOSED),
        route=("a", "x"),
        source=source,
    )
    toolkit = Toolkit.from_entries([entry])
    assert await toolkit.call("shown", {"id": 1}) == {
        "source": "a",
        "tool": "x",
        "input": {"id": 1},
    }
    # Its handler runs it the same way, for a host that wraps it.
    answer = await entry.handler({"id": 2})
    assert isinstance(answer, dict)
    assert answer["tool"] == "x"
    assert source.calls == [("x", {"id": 1}), ("x", {"id": 2})]


async def test_an_entry_with_nothing_to_run_is_a_defect_the_model_reads_as_such() -> None:
    entry = ToolEntry(tool=Tool(name="t", description="", input_schema={}))
    result = await Toolkit.from_entries([entry]).invoke("t", {})
    assert result.failure is not None
    assert result.failure.code == "UnknownError"


def test_needs_approval_may_be_a_function_of_the_input() -> None:
    tool = Tool(
        name="t",
        description="",
        input_schema={},
        needs_approval=lambda input: input.get("amount", 0) > 100,  # type: ignore[operator]
    )
    assert tool.requires_approval({"amount": 101}) is True
    assert tool.requires_approval({"amount": 5}) is False


async def test_unwrap_gives_the_value_or_raises_what_failed() -> None:
    error = at.AuthenticationError(source="s")
    assert ToolResult(value=3).unwrap() == 3
    with pytest.raises(at.AuthenticationError) as caught:
        ToolResult.failed(error.to_failure(), error).unwrap()
    assert caught.value is error
    with pytest.raises(at.Failure):
        ToolResult.failed(at.Failure(code="X", message="m")).unwrap()


async def test_a_handler_that_unwraps_another_toolkit_keeps_the_error_behind_it() -> None:
    error = at.AuthenticationError(source="s", message="token expired")
    inner = one_tool(Recording("s", {"tool": raising(error)}))

    async def proxy(input: JsonObject) -> JsonValue:
        return (await inner.invoke("s__tool", input)).unwrap()

    outer = Toolkit.from_entries(
        [ToolEntry(tool=Tool(name="proxy", description="", input_schema={}), handler=proxy)]
    )
    result = await outer.invoke("proxy", {})
    assert result.value == await inner.call("s__tool", {})
    assert result.error is error


async def test_a_tool_that_needs_approval_is_refused_where_nobody_is_asked() -> None:
    source = Recording("db")
    toolkit = at.assemble([at.Member(source, [define("write")])], lambda _, __: "approve")
    refusal = at.Failure.from_json(await toolkit.call("db__write", {}))
    assert refusal is not None
    assert refusal.code == "ApprovalRequired"
    assert "run it in a Session" in refusal.message
    assert (await toolkit.invoke("db__write", {})).failure == refusal
    with pytest.raises(at.Failure) as raised:
        await at.presentation.call(toolkit, "db__write", {})
    assert raised.value.code == "ApprovalRequired"
    assert source.calls == []
    # The host says it approved the call: it runs.
    assert await toolkit.call("db__write", {}, approved=True) == {
        "source": "db",
        "tool": "write",
        "input": {},
    }
    await at.presentation.call(toolkit, "db__write", {}, approved=True)
    assert len(source.calls) == 2


def test_an_async_decide_is_a_clear_error_naming_the_fix() -> None:
    async def decide(source: str, definition: at.ToolDefinition) -> at.Decision:
        return "allow"

    member = at.Member(Recording("db"), [define("read")])
    with pytest.raises(TypeError, match="not async def"):
        at.assemble([member], decide)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not async def"):
        at.assemble([member], lambda s, d: decide(s, d))  # type: ignore[arg-type,return-value]


class Told:
    """A source that records its calls."""

    name = "told"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def discover(self) -> list[at.ToolDefinition]:
        return [define("tool")]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append("call")
        return "called"


class Counted(Told):
    """A host's subclass that overrides ``call``: its ``call`` must be what is reached."""

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append("counted")
        return await super().call(tool, input)


@pytest.mark.parametrize("inline", [True, False])
async def test_a_toolkit_reaches_its_sources_own_call_bare_and_over_an_actor(inline: bool) -> None:
    # The one way into a source is its call: a subclass's override is what runs, every time.
    counted = Counted()
    assert await one_tool(counted).call("told__tool", {}) == "called"
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(counted, inline=inline)
        async with at.Session(one_tool(ref), approve=lambda _n, _i: True) as session:
            assert await session.call("told__tool", {}) == "called"
        assert await ref.call("tool", {}) == "called"
    assert counted.calls == ["counted", "call"] * 3


async def test_an_answer_is_the_result_its_value_makes_whole() -> None:
    # A call's answer is the same value as the one its __init__ makes, every field set.
    result = await one_tool(Recording("s")).invoke("s__tool", {"id": 1})
    assert result == ToolResult(value=result.value)
    assert attrs.asdict(result, recurse=False) == attrs.asdict(
        ToolResult(value=result.value), recurse=False
    )
    assert repr(result) == repr(ToolResult(value=result.value))
