"""LangChain and LangGraph: a toolkit's tools as LangChain tools, a person's approval by
LangGraph's ``interrupt``.

Needs the ``langchain`` extra (``pip install -e './amends-toolkit[langchain]'``: ``langchain-core``,
and ``langgraph`` for approval)::

    import amends_toolkit as at

    tools = at.adapters.langchain.tools(toolkit)
    model = chat_model.bind_tools(tools)
    message = await model.ainvoke("What is on my calendar?")
    answers = [await by_name[call["name"]].ainvoke(call) for call in message.tool_calls]

Over a bare toolkit, a call that needs approval stops its graph with ``interrupt`` and runs, once,
when the graph is resumed with the person's answer (``Command(resume=True)``; ``False`` refuses
it). LangGraph resumes by running the interrupted task again from its start, so give each tool
call a task of its own (``Send``, as LangChain's ``create_agent`` does): calls that ran beside it
in the same task (a prebuilt ``ToolNode`` given a whole message) would run again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from amends_toolkit._content import Text, content_parts
from amends_toolkit._extras import missing_extra
from amends_toolkit.adapters._calls import content_of, is_failure, needs_approval, with_source_names
from amends_toolkit.adapters._openai import IMAGES
from amends_toolkit.adapters._schemas import model_schema
from amends_toolkit.runtime import DENIED, Session, Toolkit

try:
    from langchain_core.tools import BaseTool, ToolException
    from langgraph.types import interrupt
    from pydantic import PrivateAttr
except ModuleNotFoundError as error:
    raise missing_extra(
        error,
        extra="langchain",
        modules=("langchain_core", "langgraph", "pydantic"),
        needed_by="amends_toolkit.adapters.langchain",
    ) from error

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("Content", "tools")

Content: TypeAlias = str | list[str | dict[str, Any]]
"""What a tool gives LangChain as its ``ToolMessage``'s content: text, or its content blocks
when the answer holds media."""

_WHY: Final = "a LangChain tool message cannot carry it"


def tools(caller: Toolkit | Session) -> list[BaseTool]:
    """The tools of a toolkit, or of a session, as LangChain tools, in its order.

    Each has the tool's name and description and, as ``args_schema``, its JSON schema as the
    model APIs take it (an object root, property names they accept; see ``_schemas``), which a
    chat model's ``bind_tools`` sends as it is. It runs asynchronously only (``ainvoke``, a
    graph's ``ainvoke`` or ``astream``), the call on the toolkit's one path (input check,
    approval, failure mapping); the toolkit checks the input, LangChain does not. A failure (a
    refused input, a source's error, a defect) is the Failure's JSON text as the result, in a
    ``ToolMessage`` whose ``status`` is ``"error"`` when the tool is given a tool call, never an
    exception of the run. Cancelling the run cancels the call.

    Args:
        caller: A session runs each call as the harness does: it asks its ``approve`` before a
            tool that needs approval, shows errors to its ``on_error`` and applies its timeout.
            Over a bare toolkit, a call that needs approval (the tool's ``needs_approval`` for
            an input its schema takes) first calls LangGraph's ``interrupt`` with
            ``{"tool": name, "input": input}``; the graph stops there, and the call runs with
            ``approved=True`` when it is resumed with ``Command(resume=True)``, and not at all
            with ``False`` (the model reads ``ApprovalDenied``, as in a Session). That needs a
            graph compiled with a checkpointer; outside a graph LangGraph's ``interrupt``
            raises.

    A result of MCP content blocks (:mod:`amends_toolkit._content`) is a list of LangChain's
    standard content blocks: ``text``, ``image`` (PNG, JPEG, WebP, GIF, as base64) and ``file``
    (a PDF, its name in ``extras``), which each chat model integration gives its API in its own
    form; any other medium (a sound: a tool message carries no audio) is a line of text saying
    what it was.
    """
    toolkit = caller.toolkit if isinstance(caller, Session) else caller
    made: list[BaseTool] = []
    for tool in toolkit.tools.values():
        one = _ToolkitTool(
            name=tool.name,
            description=tool.description,
            args_schema=cast("dict[str, Any]", model_schema(tool.input_schema)),
            handle_tool_error=True,
        )
        one._caller = caller
        made.append(one)
    return made


class _ToolkitTool(BaseTool):
    """A tool of a toolkit, run on its one call path."""

    _caller: Toolkit | Session = PrivateAttr()

    def _run(self, /, *args: Any, **kwargs: Any) -> Content:
        raise NotImplementedError(
            f"{self.name} runs asynchronously only: await tool.ainvoke(...), or run the graph"
            " with ainvoke or astream"
        )

    async def _arun(self, /, *args: Any, **given: Any) -> Content:
        # The model's arguments come as keywords: any name is one, none is LangChain's own
        # (no run_manager or config parameter is declared, so LangChain adds neither).
        caller, name = self._caller, self.name
        input = with_source_names(caller, name, cast("JsonObject", given))
        if isinstance(caller, Session):
            value = await caller.call(name, input)
        elif needs_approval(caller, name, input):
            try:
                answer = interrupt({"tool": name, "input": input})
            except (KeyError, RuntimeError) as error:
                # What LangGraph's interrupt raises where no graph runs the tool.
                raise RuntimeError(
                    f"{name} needs a person's approval, asked by LangGraph's interrupt: run the"
                    " tool in a graph compiled with a checkpointer, or give tools() a Session,"
                    " whose approve asks"
                ) from error
            if not isinstance(answer, bool):
                raise TypeError(
                    f"the graph was resumed with {answer!r} for {name}; resume it with"
                    " Command(resume=True) to run the call or Command(resume=False) to refuse it"
                )
            value = await caller.call(name, input, approved=True) if answer else DENIED.to_json()
        else:
            value = await caller.call(name, input)
        if is_failure(value):
            # handle_tool_error gives it as the result, with status "error".
            raise ToolException(content_of(value))
        return _content(value)


def _content(value: JsonValue) -> Content:
    parts = content_parts(value)
    if parts is None:
        return content_of(value)
    blocks: list[str | dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Text):
            blocks.append({"type": "text", "text": part.text})
        elif part.kind == "image" and part.mime_type in IMAGES:
            blocks.append({"type": "image", "base64": part.data, "mime_type": part.mime_type})
        elif part.mime_type == "application/pdf":
            blocks.append(
                {
                    "type": "file",
                    "base64": part.data,
                    "mime_type": part.mime_type,
                    "extras": {"filename": part.filename},
                }
            )
        else:
            blocks.append({"type": "text", "text": part.placeholder(_WHY).text})
    return blocks
