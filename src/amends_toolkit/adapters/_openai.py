"""OpenAI: the toolkit's tools as function tools, and a model's calls run and answered.

Function tools are never in strict mode: the parameters are the source's and may leave a property
optional, which strict mode refuses. The parameters have an object root and property names the
API accepts; a model's arguments are given back the source's names (see ``_schemas``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from amends_toolkit.adapters._calls import (
    NOT_OURS,
    PendingCall,
    ToolCaller,
    ToolCallLike,
    arguments,
    content_of,
    read,
    run_all,
    text_field,
)
from amends_toolkit.adapters._schemas import model_schema

if TYPE_CHECKING:
    from collections.abc import Iterable

    from amends_toolkit._json import JsonObject
    from amends_toolkit.runtime import Toolkit

__all__ = (
    "openai_responses_tools",
    "openai_tools",
    "run_openai_function_calls",
    "run_openai_tool_calls",
)


def openai_tools(toolkit: Toolkit) -> list[JsonObject]:
    """The toolkit's tools as Chat Completions function tools (``tools=`` of a request).

    Each is ``{"type": "function", "function": {"name", "description", "parameters",
    "strict": False}}``, as the ``openai`` SDK's ``ChatCompletionFunctionToolParam`` is.
    """
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": model_schema(tool.input_schema),
                "strict": False,
            },
        }
        for tool in toolkit.tools.values()
    ]


def openai_responses_tools(toolkit: Toolkit) -> list[JsonObject]:
    """The toolkit's tools as Responses API function tools (``tools=`` of a request).

    Each is ``{"type": "function", "name", "description", "parameters", "strict": False}``, as
    the ``openai`` SDK's ``FunctionToolParam`` is.
    """
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": model_schema(tool.input_schema),
            "strict": False,
        }
        for tool in toolkit.tools.values()
    ]


async def run_openai_tool_calls(
    caller: ToolCaller, tool_calls: Iterable[ToolCallLike] | None
) -> list[JsonObject]:
    """Run a Chat Completions message's tool calls and give the ``tool`` messages that answer.

    Args:
        caller: A :class:`~amends_toolkit.Session` (or a bare :class:`~amends_toolkit.Toolkit`).
        tool_calls: ``completion.choices[0].message.tool_calls``: the SDK's objects or dicts.

    Returns:
        One ``{"role": "tool", "tool_call_id", "content"}`` message per call, in order; append
        them to the conversation after the assistant message. Calls run concurrently. Arguments
        that are not JSON, and calls of a kind of tool the toolkit never offered, are answered
        with a failure the model reads. A result that is a string is sent as it is, any other
        JSON as JSON text.

    Raises:
        ValueError: a call lacks its ``id`` (not something the API sends).
    """
    calls = [read(call) for call in tool_calls or ()]
    ids = [text_field(call, "id", "tool call") for call in calls]
    pending: list[PendingCall] = []
    for call in calls:
        function = call.get("function")
        if call.get("type", "function") == "function" and isinstance(function, dict):
            name = text_field(function, "name", "function call")
            pending.append((name, arguments(function.get("arguments"))))
        else:
            pending.append(("", NOT_OURS))
    results = await run_all(caller, pending)
    return [
        {"role": "tool", "tool_call_id": call_id, "content": content_of(result)}
        for call_id, result in zip(ids, results, strict=True)
    ]


async def run_openai_function_calls(
    caller: ToolCaller, output: Iterable[ToolCallLike]
) -> list[JsonObject]:
    """Run the function calls of a Responses API output and give the items that answer them.

    Args:
        caller: A :class:`~amends_toolkit.Session` (or a bare :class:`~amends_toolkit.Toolkit`).
        output: ``response.output``: its items of type ``function_call`` are run, others skipped.

    Returns:
        One ``{"type": "function_call_output", "call_id", "output"}`` item per function call, in
        order, for the next request's ``input``. Calls run concurrently; arguments that are not
        JSON are answered with a failure the model reads.

    Raises:
        ValueError: a function call lacks its ``call_id`` or ``name``.
    """
    calls = [item for item in map(read, output) if item.get("type") == "function_call"]
    ids = [text_field(call, "call_id", "function call") for call in calls]
    pending: list[PendingCall] = [
        (text_field(call, "name", "function call"), arguments(call.get("arguments")))
        for call in calls
    ]
    results = await run_all(caller, pending)
    return [
        {"type": "function_call_output", "call_id": call_id, "output": content_of(result)}
        for call_id, result in zip(ids, results, strict=True)
    ]
