"""Code mode: a toolkit presented to a model as one tool, ``execute``, that runs code it writes.

The code calls the tools of the presented toolkit as functions, reads their results, and gives
back only what it returns, so a model does in one run what takes it many calls otherwise. What
runs the code is a :class:`~amends_toolkit.presentations._code_runtime.CodeRuntime`.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Literal, TypeAlias

import anyio

from amends_toolkit._errors import Failure, NoApproval, UnknownError
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_counts, check_seconds
from amends_toolkit.presentations._code_runtime import (
    MAX_CODE_LENGTH,
    MAX_LOG_LENGTH,
    CodeError,
    ToolError,
    attributes,
)
from amends_toolkit.presentations._declarations import declare
from amends_toolkit.presentations._monty import MontyRuntime, PendingCall
from amends_toolkit.runtime import DENIED, Tool, ToolEntry, Toolkit, asking, untimed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.presentations._code_runtime import CodeRuntime
    from amends_toolkit.runtime._call import Ask

__all__ = ("EXECUTE", "MAX_INPUT_LENGTH", "ApprovalMode", "CodeTools", "code_mode")

EXECUTE = "execute"
"""The name of the tool that runs code."""

ApprovalMode: TypeAlias = Literal["split", "ask"]
"""Where a tool that needs approval goes: beside ``execute`` (``"split"``), or into the code."""

MAX_INPUT_LENGTH = 1_000_000
"""The most characters of JSON a tool call from code may send: a model's own call is bounded by
the request that carries it, and one from code by nothing else (its sandbox holds 256 MiB)."""

_log = get_logger(__name__)


def code_mode(
    toolkit: Toolkit,
    runtime: CodeRuntime,
    *,
    timeout: float = 60.0,
    max_result_length: int = 50_000,
    max_log_length: int = MAX_LOG_LENGTH,
    max_code_length: int = MAX_CODE_LENGTH,
    approval: ApprovalMode = "split",
    type_check: bool = False,
) -> Toolkit:
    """Present ``toolkit`` to a model as ``execute``, which runs Python the model writes.

    ``execute({code})`` takes the body of an async function. The code calls a tool as
    ``await tools.<name>({...})`` with one dict (a ``-`` of a name is ``_`` there; a name that
    would start with a digit or be a keyword gets a leading ``_``; ``tools["<name>"]`` takes any
    name as it is), prints what it wants to see, and returns JSON. The run answers
    ``{"result": ..., "logs": [...]}``, ``result`` being ``None`` when the code returns nothing.
    ``execute``'s description declares the tools as Python stubs written from their schemas.
    Output past ``max_log_length`` characters is dropped, and the last log line says how much.
    Code longer than ``max_code_length`` characters is refused (``InvalidInputError``, as any
    input ``execute``'s schema refuses) before anything reads it.

    A tool is called from code as a model calls it directly: its input is checked against its
    schema and it runs in the toolkit; a failure (``NotFoundError`` for a name that is no tool,
    ``InvalidInputError``, the source's own) raises ``ToolError`` in the code, which it may catch.
    An input of more than :data:`MAX_INPUT_LENGTH` characters of JSON is refused unread
    (``InvalidInputError``).

    A run fails as a result the model reads (``at.Failure`` JSON): ``CodeError`` when the code
    raised (with what it logged before), did not type-check (``type_check``) or made more tool
    calls than the runtime allows, ``Timeout`` when it ran longer than ``timeout`` seconds, its
    tool calls counted in (the run and its calls are cancelled), and ``ResultTooLarge`` when the
    JSON of its answer is longer than ``max_result_length`` characters.

    A tool that needs approval (``needs_approval`` True, or a function of its input):

    - ``approval="split"`` (the default): it is a tool of its own beside ``execute`` in the
      presented toolkit, so a session asks about its calls as about any other, and it is not
      declared to the code; code that calls it anyway reads (as a ``ToolError``) that it needs a
      person's approval and is to be called directly.
    - ``approval="ask"``: it is declared to the code like any other. A call of it that needs
      approval waits for the :class:`~amends_toolkit.Session` running ``execute`` to ask its
      ``approve``; the tool runs if the person approves, else the code reads a ``ToolError``
      ``"ApprovalDenied: ..."``, which it may catch. On :class:`MontyRuntime` the run pauses
      meanwhile as a snapshot (bytes) and holds no worker. The time the person takes counts in
      neither ``timeout`` nor the Session's. Outside a Session nobody can be asked: such a call
      reads ``ApprovalRequired``, and the tool does not run. Closing the Session while a person
      is asked cancels the run.

    ``execute`` needs no approval. Cancelling a call of ``execute`` cancels the run, and is never
    read as a failure.

    Args:
        toolkit: The toolkit to present, usually an assembly's.
        runtime: What runs the code (:class:`MontyRuntime`; :class:`InProcessRuntime` in tests).
        timeout: The most seconds a run may take, its tool calls included, a person's wait not.
        max_result_length: The most characters the JSON of a run's answer may have.
        max_log_length: The most characters of a run's printed output kept.
        max_code_length: The most characters of code a run takes (``execute``'s schema says it).
        approval: ``"split"`` or ``"ask"``, as above.
        type_check: Type-check the code against the declarations before it runs (Monty's
            checker): an unknown tool, a missing required key or a wrong type is a ``CodeError``
            naming its line, and no tool runs.

    Raises:
        ValueError: ``timeout`` is not a positive, finite number; ``max_result_length``,
            ``max_log_length`` or ``max_code_length`` not a positive whole number; ``approval``
            neither mode; or ``type_check`` asked of a runtime other than :class:`MontyRuntime`.
        NameClash: A tool that needs approval is named ``execute`` (``"split"``).
    """
    check_seconds(timeout=timeout)
    check_counts(
        max_result_length=max_result_length,
        max_log_length=max_log_length,
        max_code_length=max_code_length,
    )
    if approval not in ("split", "ask"):
        raise ValueError(f'approval must be "split" or "ask", not {approval!r}')
    if type_check and not isinstance(runtime, MontyRuntime):
        raise ValueError("type_check needs a MontyRuntime: Monty's type checker checks the code")
    tools = CodeTools(toolkit, approval=approval)

    async def execute(input: JsonObject) -> JsonValue:
        code = input["code"]
        assert isinstance(code, str)  # the schema holds it so
        if isinstance(runtime, MontyRuntime) and not runtime.entered:
            raise UnknownError(
                source=EXECUTE,
                message="code mode's MontyRuntime is not running: enter it (async with"
                " at.MontyRuntime() as runtime:) around every run of execute",
            )
        ask = asking()  # the Session's, read here: the run's own tasks may not see it
        with anyio.move_on_after(timeout) as scope:
            try:
                result, logs = await runtime.run(
                    code,
                    tools.names,
                    tools.call,
                    approval=_Asking(tools, ask, scope) if approval == "ask" else None,
                    max_log_length=max_log_length,
                    stubs=tools.declarations if type_check else None,
                )
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
        if _longer(answer, max_result_length):
            raise Failure(
                code="ResultTooLarge",
                message=f"The code's answer is more than {max_result_length} characters of JSON,"
                " the most a run may give. Return less: filter, count or summarize in the"
                " code, and print less.",
            )
        return answer

    max_calls = runtime.max_calls if isinstance(runtime, MontyRuntime) else None
    description = _description(tools.declarations, tools.apart, max_calls)
    return Toolkit.from_entries(
        [
            ToolEntry(tool=_execute_tool(description, max_code_length), handler=execute),
            *(toolkit.entry(name) for name in tools.apart),
        ]
    )


class CodeTools:
    """The tools of code mode's runs over a toolkit: which the code may call, and how each runs.

    :func:`code_mode` makes one; a host that drives a :class:`MontyRuntime` itself (to keep a
    paused run, or resume it in another process) makes the same, and gives ``names``, ``call``
    and itself (an :class:`Approval`) to :meth:`MontyRuntime.start` and
    :meth:`MontyRuntime.resume`, and answers a paused run's calls with :meth:`answer`::

        tools = CodeTools(toolkit, approval="ask")
        step = await runtime.start(code, tools.names, tools.call, approval=tools)
        ...
        answers = [await tools.answer(call, approved=...) for call in paused.calls]
        step = await runtime.resume(paused, answers, tools.call, approval=tools)

    Attributes:
        toolkit: The toolkit presented.
        names: The names the code may reach: those declared to it, then those apart.
        declared: The tools declared to the code, which it calls.
        apart: With ``approval="split"``, the tools that need approval: beside ``execute``, and
            each call of them from code is refused (``ApprovalRequired``) with a word that says
            to call it directly.
        declarations: The Python stubs of the declared tools.
    """

    def __init__(self, toolkit: Toolkit, *, approval: ApprovalMode = "split") -> None:
        self.toolkit = toolkit
        asks = approval == "ask"
        self.declared = tuple(
            tool.name for tool in toolkit.tools.values() if asks or not tool.needs_approval
        )
        self.apart = tuple(name for name in toolkit.tools if name not in self.declared)
        self.names = (*self.declared, *self.apart)
        self._by_name = attributes(self.names)
        self.declarations = declare(
            [(self._by_name[name], toolkit.tools[name]) for name in self.declared]
        )

    async def call(self, name: str, input: JsonObject) -> JsonValue:
        """Run a call that waits for no one: its answer, or raise :class:`ToolError`."""
        if name in self.apart:
            raise ToolError(
                code="ApprovalRequired",
                message=f"tools.{self._by_name[name]} needs a person's approval, so code cannot"
                f" call it: it is a tool of its own beside `{EXECUTE}`. Call {name} directly"
                f" (not from code), then use its result in another run.",
            )
        if self.needed(name, input):
            # the runtime asks needed() first; a runtime that did not reaches here
            raise ToolError(code="ApprovalRequired", message=_UNASKED)
        return await self._run(name, input, approved=False)

    def needed(self, name: str, input: JsonObject) -> bool:
        """Whether this call of a declared tool waits for a person (its input being valid)."""
        if name not in self.declared or _longer(input, MAX_INPUT_LENGTH):
            return False  # the call is refused as it runs, unasked
        entry = self.toolkit.entry(name)
        return entry.check(input) is None and entry.tool.requires_approval(input)

    async def ask(self, name: str, input: JsonObject) -> JsonValue:
        """No one is asked here: raise ``ApprovalRequired`` (a Session asks, in code mode)."""
        raise ToolError(code="ApprovalRequired", message=_UNASKED)

    async def answer(self, call: PendingCall, *, approved: bool) -> JsonValue | ToolError:
        """What a paused run reads of a call a person answered: the tool's answer when they
        approved (it runs now, its input checked against the tool's schema as a first call's
        is), else the refusal (``ApprovalDenied``); a failure as ToolError."""
        if not approved:
            _log.info("call.denied", tool=call.name)
            return ToolError(code=DENIED.code, message=DENIED.message)
        try:
            # a paused run's bytes and the toolkit may have changed since the call was made
            return await self._run(call.name, call.input, approved=True)
        except ToolError as error:
            return error

    async def _run(self, name: str, input: JsonObject, *, approved: bool) -> JsonValue:
        """A declared tool's call on the toolkit's one path (its name, input check, approval)."""
        if name not in self.declared:
            raise ToolError(code="NotFoundError", message=f"There is no tool {name!r} to call.")
        if _longer(input, MAX_INPUT_LENGTH):
            raise ToolError(
                code="InvalidInputError",
                message=f"The input is more than {MAX_INPUT_LENGTH} characters of JSON, the"
                " most a call from code may send. Send less, or split it over several calls.",
            )
        result = await self.toolkit.invoke(name, input, approved=approved)
        if result.failure is not None:
            raise ToolError(code=result.failure.code, message=result.failure.message)
        return result.value


_UNASKED = (
    "This call needs a person's approval, and no one can be asked here (execute runs outside a"
    " Session); it did not run."
)


class _Asking:
    """Code mode's :class:`Approval`: the Session's ``approve``, the run's clock stopped."""

    def __init__(self, tools: CodeTools, ask: Ask | None, scope: anyio.CancelScope) -> None:
        self._tools = tools
        self._ask = ask
        self._scope = scope

    def needed(self, name: str, input: JsonObject) -> bool:
        return self._tools.needed(name, input)

    async def ask(self, name: str, input: JsonObject) -> JsonValue:
        if self._ask is None:
            return await self._tools.ask(name, input)
        with untimed(self._scope):
            try:
                approved = await self._ask(name, input)
            except NoApproval as undecided:
                failure = undecided.to_failure()
                raise ToolError(code=failure.code, message=failure.message) from None
        answer = await self._tools.answer(
            PendingCall(id=0, name=name, input=input), approved=approved
        )
        if isinstance(answer, ToolError):
            raise answer
        return answer


def _longer(value: object, limit: int) -> bool:
    """Whether ``json.dumps(value, ensure_ascii=False)`` is longer than ``limit`` characters.

    Each value adds a character at least, so the walk stops within ``limit`` of them: what code
    returns or sends may be as large as its sandbox's memory, and is not written out to be
    measured. A value that is no JSON counts as one character (the input check refuses it).
    """
    length = 0
    values = [value]
    while values:
        item = values.pop()
        if isinstance(item, str):
            # the JSON of a string is at least its characters and two quotes
            length += (
                len(item) + 2 if len(item) > limit else len(json.dumps(item, ensure_ascii=False))
            )
        elif isinstance(item, dict):
            # "{}", and ": " in each pair and ", " between them
            length += 4 * len(item) if item else 2
            if length <= limit:
                values.extend(item)
                values.extend(item.values())
        elif isinstance(item, list):
            length += 2 * len(item) if item else 2  # "[]", and ", " between the items
            if length <= limit:
                values.extend(item)
        elif isinstance(item, int | float) or item is None:
            try:
                length += len(json.dumps(item))
            except ValueError:  # an integer past the digits Python writes: at least that many
                length += sys.get_int_max_str_digits()
        else:
            length += 1
        if length > limit:
            return True
    return False


def _code_error(error: CodeError) -> str:
    message = error.message
    if error.logs:
        message += "\nWhat it logged before:\n" + "\n".join(error.logs)
    return message


def _description(declarations: str, apart: Sequence[str], max_calls: int | None) -> str:
    note = f" A run may make at most {max_calls} tool calls." if max_calls is not None else ""
    if apart:
        note += (
            "\n\nThese tools need a person's approval, so code cannot call them: each is a tool"
            f" of its own beside `{EXECUTE}`, to call directly: " + ", ".join(apart) + "."
        )
    return (
        "Run Python code that calls tools, and read what it returns. `code` is the body of an"
        " async function: call a tool as `await tools.<name>({...})` with one dict (or"
        ' `await tools["<exact name>"]({...})`), use print() for what you want to see, and'
        " `return` a JSON value (dicts, lists, strings, numbers, booleans, None). The answer is"
        ' {"result": <what the code returned>, "logs": [<lines printed>]}. A tool call that'
        ' fails raises ToolError (str(error) is "<code>: <message>"), which the code may catch'
        " with `except ToolError as error:`. Do several calls in one run, filter their results"
        " in code, and return only what you need. The code reaches nothing but `tools`."
        + note
        + "\n\nThe tools, as Python declarations:\n\n```python\n"
        + declarations
        + "```"
    )


def _execute_tool(description: str, max_code_length: int) -> Tool:
    return Tool(
        name=EXECUTE,
        description=description,
        input_schema={
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The body of an async Python function that calls the tools.",
                    "maxLength": max_code_length,
                },
            },
            "required": ["code"],
            "additionalProperties": False,
        },
    )
