"""Whole agent turns of the OpenAI Agents SDK over a toolkit: ``Runner.run`` with the SDK's own
``ScriptedModel`` (no network), the calls counted at the source."""

from __future__ import annotations

import json

import anyio
import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, RunResult
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.adapters import openai_agents
from amends_toolkit.runtime import DENIED

from .kit import DEFINITIONS, ECHO_SCHEMA, Source, approve_all, toolkit
from .media import PNG, WAV, media_toolkit
from .test_media import PDF, Reports

pytestmark = pytest.mark.anyio

# Tracing would post spans to the OpenAI API: a test reaches no network.
OFFLINE = RunConfig(tracing_disabled=True)


def outputs(call: ModelCall) -> dict[str, JsonValue]:
    """The tool outputs the model was given, by call id, as the model reads them."""
    found: dict[str, JsonValue] = {}
    for item in call.input if isinstance(call.input, list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            found[item["call_id"]] = read(item["output"])
    return found


def read(output: JsonValue) -> JsonValue:
    """A tool's output text as JSON where it is JSON (a string answer is sent as it is)."""
    if not isinstance(output, str):
        return output
    try:
        return json.loads(output)  # type: ignore[no-any-return]
    except json.JSONDecodeError:
        return output


class Script:
    """A model that makes each turn's calls in order, then says what it read, as JSON."""

    def __init__(self, *turns: list[tuple[str, JsonObject | str]]) -> None:
        self.turns = list(turns)
        self.read: dict[str, JsonValue] = {}
        self.model = ScriptedModel([ModelStep.respond(self.respond) for _ in range(len(turns) + 1)])
        self.count = 0

    def respond(self, call: ModelCall) -> ModelStep:
        self.read.update(outputs(call))
        if not self.turns:
            return ModelStep(output=[assistant_message(json.dumps(self.read))])
        turn = self.turns.pop(0)
        made = []
        for name, args in turn:
            self.count += 1
            made.append(function_call(name, args, call_id=f"call_{self.count}"))
        return ModelStep(output=made)


def agent(script: Script, caller: at.Toolkit | at.Session) -> Agent[None]:
    return Agent(name="test", model=script.model, tools=openai_agents.tools(caller))


async def run(agent: Agent[None], input: str = "go") -> RunResult:
    return await Runner.run(agent, input, run_config=OFFLINE)


def test_every_tool_is_a_function_tool_never_strict() -> None:
    tools = [
        tool for tool in openai_agents.tools(toolkit(Source())) if isinstance(tool, FunctionTool)
    ]
    assert len(tools) == 5
    assert [tool.name for tool in tools] == [
        "s__echo",
        "s__upper",
        "s__fail",
        "s__wait",
        "s__delete",
    ]
    echo = tools[0]
    assert echo.params_json_schema == ECHO_SCHEMA
    assert echo.description == "Echo the text."
    assert all(tool.strict_json_schema is False for tool in tools)
    assert [tool.needs_approval is False for tool in tools] == [True, True, True, True, False]


async def test_a_run_calls_a_tool_reads_a_failure_and_pauses_for_an_approval_it_is_given() -> None:
    source = Source()
    script = Script(
        [("s__echo", {"text": "hi"}), ("s__fail", {})],
        [("s__delete", {})],
    )
    one = agent(script, toolkit(source))
    paused = await run(one)
    [interruption] = paused.interruptions
    assert interruption.name == "s__delete"
    assert source.calls == [("echo", {"text": "hi"}), ("fail", {})]
    assert script.read["call_1"] == {"echo": "hi"}
    assert script.read["call_2"] == (
        at.CallFailedError(source="s", message="the row is locked").to_failure().to_json()
    )

    state = paused.to_state()
    state.approve(interruption)
    done = await Runner.run(one, state, run_config=OFFLINE)
    assert not done.interruptions
    assert source.calls == [("echo", {"text": "hi"}), ("fail", {}), ("delete", {})]
    assert json.loads(done.final_output)["call_3"] == "deleted"
    script.model.assert_complete()


async def test_a_rejected_call_never_runs_and_the_model_reads_the_sessions_refusal() -> None:
    source = Source()
    script = Script([("s__delete", {})])
    one = agent(script, toolkit(source))
    paused = await run(one)
    [interruption] = paused.interruptions
    state = paused.to_state()
    state.reject(interruption, rejection_message=openai_agents.REJECTION_MESSAGE)
    done = await Runner.run(one, state, run_config=OFFLINE)
    assert source.calls == []
    assert json.loads(done.final_output) == {"call_1": DENIED.to_json()}


async def test_a_call_rejected_in_the_sdks_words_does_not_run_either() -> None:
    source = Source()
    script = Script([("s__delete", {})])
    one = agent(script, toolkit(source))
    paused = await run(one)
    state = paused.to_state()
    state.reject(paused.interruptions[0])
    await Runner.run(one, state, run_config=OFFLINE)
    assert source.calls == []


async def test_over_a_session_the_session_asks_and_the_run_never_pauses() -> None:
    asked: list[tuple[str, JsonObject]] = []

    def refuse(name: str, input: JsonObject) -> bool:
        asked.append((name, input))
        return False

    source = Source()
    script = Script([("s__delete", {"id": 1}), ("s__echo", {"text": "a"})])
    async with at.Session(toolkit(source), approve=refuse) as session:
        result = await run(agent(script, session))
    assert not result.interruptions
    assert asked == [("s__delete", {"id": 1})]
    assert source.calls == [("echo", {"text": "a"})]
    assert json.loads(result.final_output)["call_1"] == DENIED.to_json()


async def test_over_a_session_an_approved_call_runs_once() -> None:
    source = Source()
    script = Script([("s__delete", {})])
    async with at.Session(toolkit(source), approve=approve_all) as session:
        result = await run(agent(script, session))
    assert source.calls == [("delete", {})]
    assert json.loads(result.final_output) == {"call_1": "deleted"}


async def test_arguments_that_are_no_json_object_are_a_failure_the_model_reads() -> None:
    source = Source()
    script = Script([("s__echo", "{not json"), ("s__echo", "[1]")])
    result = await run(agent(script, toolkit(source)))
    read = json.loads(result.final_output)
    assert read["call_1"]["code"] == read["call_2"]["code"] == "InvalidInputError"
    assert source.calls == []


async def test_tool_search_asks_the_found_tools_approval_of_the_input() -> None:
    source = Source()
    searched = at.tool_search(toolkit(source))
    script = Script(
        [("tool_search", {"query": "echo"})],
        [
            ("tool_call", {"name": "s__echo", "input": {"text": "hi"}}),
            ("tool_call", {"name": "s__delete", "input": {}}),
        ],
    )
    one = agent(script, searched)
    paused = await run(one)
    [interruption] = paused.interruptions
    assert json.loads(interruption.arguments or "") == {"name": "s__delete", "input": {}}
    assert source.calls == [("echo", {"text": "hi"})]
    found = script.read["call_1"]
    assert isinstance(found, dict)
    assert isinstance(found["tools"], list)
    assert {"name": "s__echo"}.items() <= found["tools"][0].items()  # type: ignore[union-attr]

    state = paused.to_state()
    state.approve(interruption)
    done = await Runner.run(one, state, run_config=OFFLINE)
    assert source.calls == [("echo", {"text": "hi"}), ("delete", {})]
    assert json.loads(done.final_output)["call_3"] == "deleted"


async def test_code_mode_runs_code_and_keeps_the_tool_needing_approval_beside_it() -> None:
    source = Source()
    coded = at.code_mode(toolkit(source), at.InProcessRuntime())
    assert [tool.name for tool in openai_agents.tools(coded)] == ["execute", "s__delete"]
    code = "return (await tools.s__echo({'text': 'a'}))['echo']"
    script = Script([("execute", {"code": code})], [("s__delete", {})])
    one = agent(script, coded)
    paused = await run(one)
    assert script.read["call_1"] == {"result": "a", "logs": []}
    [interruption] = paused.interruptions
    state = paused.to_state()
    state.approve(interruption)
    await Runner.run(one, state, run_config=OFFLINE)
    assert source.calls == [("echo", {"text": "a"}), ("delete", {})]


async def test_media_reach_the_model_as_the_sdks_image_and_file_outputs() -> None:
    script = Script([("test_image_content", {}), ("test_audio_content", {})], [("report", {})])
    reports = Reports()
    async with media_toolkit() as (kit, _):
        both = at.presentations.merge(kit, at.source_toolkit(reports, await reports.discover()))
        await run(agent(script, both))
    image, audio, pdf = script.read["call_1"], script.read["call_2"], script.read["call_3"]
    assert image == [{"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}]
    assert audio == [
        {
            "type": "input_text",
            "text": "[audio audio/wav, 46 bytes: the Responses API cannot carry it]",
        }
    ]
    assert isinstance(pdf, list)
    assert pdf[-1] == {
        "type": "input_file",
        "file_data": f"data:application/pdf;base64,{PDF}",
        "filename": "q3.pdf",
    }
    assert PDF not in json.dumps(pdf[:-1])
    assert WAV not in json.dumps(audio)


async def test_an_input_the_schema_refuses_fails_unasked_and_a_good_one_pauses() -> None:
    source = Source()
    echo_asks = at.assemble(
        [at.Member(source, DEFINITIONS)],
        lambda _, d: "approve" if d.name == "echo" else "allow",
    )
    script = Script([("s__echo", {"text": 1}), ("s__echo", {"text": "a"})])
    one = agent(script, echo_asks)
    paused = await run(one)
    [interruption] = paused.interruptions
    assert json.loads(interruption.arguments or "") == {"text": "a"}
    state = paused.to_state()
    state.reject(interruption, rejection_message=openai_agents.REJECTION_MESSAGE)
    done = await Runner.run(one, state, run_config=OFFLINE)
    read = json.loads(done.final_output)
    assert read["call_1"]["code"] == "InvalidInputError"
    assert read["call_2"] == DENIED.to_json()
    assert source.calls == []


async def test_cancelling_the_run_cancels_the_call_and_gives_no_result() -> None:
    source = Source()
    script = Script([("s__wait", {})])
    ended: list[RunResult] = []

    async def turn() -> None:
        ended.append(await run(agent(script, toolkit(source))))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(turn)
        while not source.waiting:
            await anyio.wait_all_tasks_blocked()
        tasks.cancel_scope.cancel()
    assert ended == []
    assert source.calls == [("wait", {})]
    assert not source.release.is_set()


async def test_a_call_the_sdk_never_asked_a_person_about_does_not_run() -> None:
    source = Source()
    tools = openai_agents.tools(toolkit(source))
    delete = tools[-1]
    assert isinstance(delete, FunctionTool)
    delete.needs_approval = False  # a host's mistake: the SDK now runs it unasked
    script = Script([("s__delete", {})])
    result = await Runner.run(
        Agent(name="test", model=script.model, tools=tools), "go", run_config=OFFLINE
    )
    assert not result.interruptions
    assert json.loads(result.final_output)["call_1"]["code"] == "ApprovalRequired"
    assert source.calls == []


async def test_a_property_name_the_apis_refuse_is_given_back_to_the_source() -> None:
    source = Source()
    schema: JsonObject = {"type": "object", "properties": {"filter[id]": {"type": "string"}}}
    definition = at.ToolDefinition(name="upper", description="", input_schema=schema)
    [tool] = openai_agents.tools(at.source_toolkit(source, [definition]))
    assert isinstance(tool, FunctionTool)
    assert list(tool.params_json_schema["properties"]) == ["filter_id_"]
    await run(
        agent(Script([("upper", {"filter_id_": "7"})]), at.source_toolkit(source, [definition]))
    )
    assert source.calls == [("upper", {"filter[id]": "7"})]


async def test_a_tool_approved_always_runs_its_later_calls_unpaused() -> None:
    source = Source()
    script = Script([("s__delete", {"id": 1})], [("s__delete", {"id": 2})])
    one = agent(script, toolkit(source))
    paused = await run(one)
    state = paused.to_state()
    state.approve(paused.interruptions[0], always_approve=True)
    done = await Runner.run(one, state, run_config=OFFLINE)
    assert not done.interruptions
    assert source.calls == [("delete", {"id": 1}), ("delete", {"id": 2})]
