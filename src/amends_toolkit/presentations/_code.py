"""Code mode: a toolkit presented to a model as one tool, ``execute``, that runs code it writes.

The code calls the tools of the presented toolkit as functions, reads their results, and gives
back only what it returns, so a model does in one run what takes it many calls otherwise. What
runs the code is a :class:`~amends_toolkit.presentations._runtimes.CodeRuntime`.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import anyio

from amends_toolkit._errors import Failure
from amends_toolkit._log import get_logger
from amends_toolkit.presentations._declarations import declare
from amends_toolkit.presentations._runtimes import CodeError, ToolError, attributes
from amends_toolkit.runtime import Tool, ToolEntry, Toolkit

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.presentations._runtimes import CodeRuntime

__all__ = ("EXECUTE", "code_mode")

EXECUTE = "execute"
"""The name of the tool that runs code."""

_log = get_logger(__name__)


def code_mode(
    toolkit: Toolkit,
    runtime: CodeRuntime,
    *,
    timeout: float = 60.0,
    max_result_length: int = 50_000,
) -> Toolkit:
    """Present ``toolkit`` to a model as ``execute``, which runs Python the model writes.

    ``execute({code})`` takes the body of an async function. The code calls a tool as
    ``await tools.<name>({...})`` with one dict (a ``-`` of a name is ``_`` there; a name that
    would start with a digit or be a keyword gets a leading ``_``; ``tools["<name>"]`` takes any
    name as it is), prints what it wants to see, and returns JSON. The run answers
    ``{"result": ..., "logs": [...]}``, ``result`` being ``None`` when the code returns nothing.
    ``execute``'s description declares the tools as Python stubs written from their schemas.

    A tool is called from code as a model calls it directly: its input is checked against its
    schema and it runs in the toolkit; a failure (``NotFoundError`` for a name that is no tool,
    ``InvalidInputError``, the source's own) raises ``ToolError`` in the code, which it may catch.

    A run fails as a result the model reads (``at.Failure`` JSON): ``CodeError`` when the code
    raised (with what it logged before), ``Timeout`` when it ran longer than ``timeout`` seconds,
    its tool calls counted in (the run and its calls are cancelled), and ``ResultTooLarge`` when
    the JSON of its answer is longer than ``max_result_length`` characters.

    A tool that needs approval (``needs_approval`` True, or a function of its input) cannot be
    called from code, since a session cannot ask a person in the middle of a run: it is a tool of
    its own beside ``execute`` in the presented toolkit, so a session asks about its calls as
    about any other, and it is not declared to the code. ``execute`` needs no approval.
    Cancelling a call of ``execute`` cancels the run, and is never read as a failure.

    Args:
        toolkit: The toolkit to present, usually an assembly's.
        runtime: What runs the code (:class:`MontyRuntime`; :class:`InProcessRuntime` in tests).
        timeout: The most seconds a run may take, its tool calls included.
        max_result_length: The most characters the JSON of a run's answer may have.

    Raises:
        ValueError: ``timeout`` is not a positive, finite number, or ``max_result_length`` not
            a positive whole number.
        NameClash: A tool that needs approval is named ``execute``.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if not math.isfinite(timeout):
        raise ValueError(f"timeout must be finite, not {timeout!r}")
    if (
        isinstance(max_result_length, bool)
        or not isinstance(max_result_length, int)
        or max_result_length < 1
    ):
        raise ValueError(
            f"max_result_length must be a positive whole number, not {max_result_length!r}"
        )
    callable_names = [tool.name for tool in toolkit.tools.values() if not tool.needs_approval]
    apart = [toolkit.entry(tool.name) for tool in toolkit.tools.values() if tool.needs_approval]
    allowed = frozenset(callable_names)
    by_name = attributes(callable_names)

    async def call(name: str, input: JsonObject) -> JsonValue:
        if name not in allowed:
            raise ToolError(code="NotFoundError", message=f"There is no tool {name!r} to call.")
        result = await toolkit.invoke(name, input)
        if result.failure is not None:
            raise ToolError(code=result.failure.code, message=result.failure.message)
        return result.value

    async def execute(input: JsonObject) -> JsonValue:
        code = input["code"]
        assert isinstance(code, str)  # the schema holds it so
        with anyio.move_on_after(timeout) as scope:
            try:
                result, logs = await runtime.run(code, callable_names, call)
            except CodeError as error:
                raise Failure(code="CodeError", message=_code_error(error)) from None
        if scope.cancelled_caught:
            _log.info("code.timed_out", timeout=timeout)
            raise Failure(
                code="Timeout",
                message=f"The code ran longer than {timeout:g} seconds (its tool calls counted"
                " in) and was stopped. Do less in one run, or fewer tool calls.",
            )
        answer: JsonValue = {"result": result, "logs": [*logs]}
        length = len(json.dumps(answer, ensure_ascii=False))
        if length > max_result_length:
            raise Failure(
                code="ResultTooLarge",
                message=f"The code's answer is {length} characters of JSON, more than the"
                f" {max_result_length} allowed. Return less: filter, count or summarize in the"
                " code, and print less.",
            )
        return answer

    description = _description([(by_name[name], toolkit.tools[name]) for name in callable_names])
    return Toolkit.from_entries(
        [ToolEntry(tool=_execute_tool(description), handler=execute), *apart]
    )


def _code_error(error: CodeError) -> str:
    message = f"The code raised {error.message}"
    if error.logs:
        message += "\nWhat it logged before:\n" + "\n".join(error.logs)
    return message


def _description(tools: list[tuple[str, Tool]]) -> str:
    return (
        "Run Python code that calls tools, and read what it returns. `code` is the body of an"
        " async function: call a tool as `await tools.<name>({...})` with one dict (or"
        ' `await tools["<exact name>"]({...})`), use print() for what you want to see, and'
        " `return` a JSON value (dicts, lists, strings, numbers, booleans, None). The answer is"
        ' {"result": <what the code returned>, "logs": [<lines printed>]}. A tool call that'
        ' fails raises ToolError (str(error) is "<code>: <message>"), which the code may catch'
        " with `except ToolError as error:`. Do several calls in one run, filter their results"
        " in code, and return only what you need. The code reaches nothing but `tools`.\n\n"
        "The tools, as Python declarations:\n\n```python\n" + declare(tools) + "```"
    )


def _execute_tool(description: str) -> Tool:
    return Tool(
        name=EXECUTE,
        description=description,
        input_schema={
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The body of an async Python function that calls the tools.",
                },
            },
            "required": ["code"],
            "additionalProperties": False,
        },
    )
