"""The OpenAI Agents SDK: a toolkit's tools as the SDK's function tools, approval included.

Needs the ``openai-agents`` extra (``pip install -e './amends-toolkit[openai-agents]'``)::

    from agents import Agent, Runner

    import amends_toolkit as at

    agent = Agent(name="assistant", tools=at.adapters.openai_agents.tools(toolkit))
    result = await Runner.run(agent, "What is on my calendar?")
    while result.interruptions:  # tools that need a person's approval paused the run
        state = result.to_state()
        for interruption in result.interruptions:
            if ask_a_person(interruption.name, interruption.arguments):
                state.approve(interruption)
            else:
                state.reject(interruption, rejection_message=REJECTION_MESSAGE)
        result = await Runner.run(agent, state)
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from amends_toolkit._errors import Failure
from amends_toolkit._extras import missing_extra
from amends_toolkit.adapters._calls import arguments, content_of, needs_approval, with_source_names
from amends_toolkit.adapters._openai import responses_output
from amends_toolkit.adapters._schemas import model_schema
from amends_toolkit.runtime import DENIED, Session, Toolkit

try:
    from agents import (
        FunctionTool,
        RunContextWrapper,
        Tool,
        ToolOutputFileContent,
        ToolOutputImage,
        ToolOutputText,
    )
except ModuleNotFoundError as error:
    raise missing_extra(
        error,
        extra="openai-agents",
        modules=("agents", "openai"),
        needed_by="amends_toolkit.adapters.openai_agents",
    ) from error

if TYPE_CHECKING:
    from agents.tool_context import ToolContext

    from amends_toolkit._json import JsonValue

__all__ = ("REJECTION_MESSAGE", "Output", "tools")

Output: TypeAlias = str | list[ToolOutputText | ToolOutputImage | ToolOutputFileContent]
"""What a tool gives the SDK: text, or its parts when the answer holds media."""

REJECTION_MESSAGE: Final = content_of(DENIED.to_json())
"""What the model reads of a call a person rejected, as a Session gives it (``ApprovalDenied``):
pass it as ``RunState.reject(interruption, rejection_message=REJECTION_MESSAGE)``. Without it the
SDK's own words reach the model; either way the tool does not run."""


def tools(caller: Toolkit | Session) -> list[Tool]:
    """The tools of a toolkit, or of a session, as the SDK's ``FunctionTool``s, in its order
    (typed as the SDK's ``Tool``, as ``Agent(tools=...)`` takes them).

    Each has the tool's name and description and its schema as the model APIs take it (an
    object root, property names they accept; see ``_schemas``), with ``strict_json_schema=False``:
    a source's schema may leave a property optional, which strict mode refuses. Its handler runs
    the call on the toolkit's one path (input check, approval, failure mapping): a failure (a
    refused input, arguments that are not JSON, a source's error, a defect) is the Failure's
    JSON text, which the model reads, never an exception of the run. Cancelling the run cancels
    the calls.

    Args:
        caller: A session runs each call as the harness does: it asks its ``approve`` before a
            tool that needs approval, shows errors to its ``on_error`` and applies its timeout;
            every tool then has ``needs_approval=False``, the session asking. Over a bare
            toolkit the SDK asks: a tool's ``needs_approval`` is a function of the call's input
            where the tool needs approval (``True`` for an input its schema takes, ``False`` for
            one it refuses, which fails unasked), so the run pauses with an interruption; an
            approved call runs with ``approved=True``, a rejected one never runs (see
            :data:`REJECTION_MESSAGE`).

    A result of MCP content blocks (:mod:`amends_toolkit._content`) is a list of
    ``ToolOutputText``, ``ToolOutputImage`` (PNG, JPEG, WebP, GIF, as a data URL) and
    ``ToolOutputFileContent`` (a PDF), which the SDK gives the Responses API as ``input_text``,
    ``input_image`` and ``input_file``; any other medium is a line of text saying what it was.
    """
    toolkit = caller.toolkit if isinstance(caller, Session) else caller
    return [
        FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=cast("dict[str, Any]", model_schema(tool.input_schema)),
            on_invoke_tool=functools.partial(_invoke, caller, tool.name),
            strict_json_schema=False,
            needs_approval=(
                False
                if isinstance(caller, Session) or tool.needs_approval is False
                else functools.partial(_needs_approval, toolkit, tool.name)
            ),
        )
        for tool in toolkit.tools.values()
    ]


async def _needs_approval(
    toolkit: Toolkit, name: str, context: RunContextWrapper[Any], params: dict[str, Any], _: str
) -> bool:
    return needs_approval(toolkit, name, with_source_names(toolkit, name, params))


async def _invoke(
    caller: Toolkit | Session, name: str, context: ToolContext[Any], text: str
) -> Output:
    given = arguments(text)
    if isinstance(given, Failure):
        return content_of(given.to_json())
    input = with_source_names(caller, name, given)
    if isinstance(caller, Session):
        value = await caller.call(name, input)
    else:
        # Approved only where the run's record says a person approved this very call.
        approved = context.is_tool_approved(context.tool_name, context.tool_call_id) is True
        value = await caller.call(name, input, approved=approved)
    return _output(value)


def _output(value: JsonValue) -> Output:
    output = responses_output(value)
    if isinstance(output, str):
        return output
    parts: list[ToolOutputText | ToolOutputImage | ToolOutputFileContent] = []
    for part in cast("list[dict[str, str]]", output):
        if part["type"] == "input_image":
            parts.append(ToolOutputImage(image_url=part["image_url"]))
        elif part["type"] == "input_file":
            parts.append(
                ToolOutputFileContent(file_data=part["file_data"], filename=part["filename"])
            )
        else:
            parts.append(ToolOutputText(text=part["text"]))
    return parts
