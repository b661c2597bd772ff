"""OpenAI: the toolkit's tools as function tools, and a model's calls run and answered.

Function tools are never in strict mode: the parameters are the source's and may leave a property
optional, which strict mode refuses. The parameters have an object root and property names the
API accepts; a model's arguments are given back the source's names (see ``_schemas``).

A result that holds media (:mod:`amends_toolkit._content`) reaches the model as media:

- Responses API: a ``function_call_output`` whose ``output`` is a list of ``input_text``,
  ``input_image`` (PNG, JPEG, WebP, GIF, as a data URL) and ``input_file`` (a PDF) parts.
- Chat Completions: a ``tool`` message carries text only, so it holds the texts and, for each
  medium, a line saying it follows; after the ``tool`` messages, one ``user`` message carries
  the media of them all (``image_url``, ``input_audio`` for WAV and MP3, ``file`` for a PDF),
  each after a text part naming its call. Every message stays in the order the API requires
  (the ``tool`` messages right after the assistant's).

Anything else (other audio, other files) is a line of text saying the API cannot carry it, never
its base64.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from amends_toolkit._content import Media, Text, content_parts
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

    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.runtime import Toolkit

__all__ = (
    "openai_responses_tools",
    "openai_tools",
    "run_openai_function_calls",
    "run_openai_tool_calls",
)

IMAGES: Final = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
"""The images the OpenAI APIs take (Anthropic's Messages API takes the same)."""
_AUDIO: Final = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3"}


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
        JSON as JSON text; one that holds media is text in its message, and its media are in
        one ``user`` message after all of them (see the module).

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
    messages: list[JsonObject] = []
    media: list[JsonValue] = []
    for call_id, result in zip(ids, results, strict=True):
        parts = content_parts(result)
        if parts is None:
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": content_of(result)}
            )
            continue
        texts: list[str] = []
        for part in parts:
            if isinstance(part, Text):
                texts.append(part.text)
                continue
            carried = _chat_media(part)
            if carried is None:
                texts.append(part.placeholder("the Chat Completions API cannot carry it").text)
            else:
                texts.append(part.placeholder("in the user message after the tool messages").text)
                media += [{"type": "text", "text": f"From tool call {call_id}:"}, carried]
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "\n".join(texts)})
    if media:
        messages.append({"role": "user", "content": media})
    return messages


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
        JSON are answered with a failure the model reads. A result that holds media is a list of
        text, image and file parts (see the module).

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
        {"type": "function_call_output", "call_id": call_id, "output": responses_output(result)}
        for call_id, result in zip(ids, results, strict=True)
    ]


def responses_output(value: JsonValue) -> JsonValue:
    """A result as a Responses API ``function_call_output``'s ``output``: text, or a list of
    ``input_text``, ``input_image`` and ``input_file`` parts when it holds media."""
    parts = content_parts(value)
    if parts is None:
        return content_of(value)
    output: list[JsonValue] = []
    for part in parts:
        if isinstance(part, Media):
            if part.kind == "image" and part.mime_type in IMAGES:
                output.append({"type": "input_image", "image_url": part.data_url()})
                continue
            if part.mime_type == "application/pdf":
                output.append(
                    {"type": "input_file", "file_data": part.data_url(), "filename": part.filename}
                )
                continue
            part = part.placeholder("the Responses API cannot carry it")
        output.append({"type": "input_text", "text": part.text})
    return output


def _chat_media(part: Media) -> JsonObject | None:
    """The content part of a Chat Completions ``user`` message that carries a medium."""
    if part.kind == "image" and part.mime_type in IMAGES:
        return {"type": "image_url", "image_url": {"url": part.data_url()}}
    audio = _AUDIO.get(part.mime_type)
    if audio is not None:
        return {"type": "input_audio", "input_audio": {"data": part.data, "format": audio}}
    if part.mime_type == "application/pdf":
        return {"type": "file", "file": {"file_data": part.data_url(), "filename": part.filename}}
    return None
