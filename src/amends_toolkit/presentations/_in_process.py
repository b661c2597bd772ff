"""The in-process runtime: code mode's code run with ``exec`` in this process, for tests only."""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from amends_toolkit.presentations._code_runtime import (
    MAX_LOG_LENGTH,
    CodeError,
    Logs,
    ToolError,
    as_json,
    attributes,
    function_body,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.presentations._code_runtime import Approval, Call

__all__ = ("InProcessRuntime",)


class InProcessRuntime:
    """Runs the code in THIS process with ``exec``. IT ISOLATES NOTHING: TESTS ONLY.

    The code can import anything, read and write files, reach the network and every secret of
    the host: never give it code a model wrote outside a test. It exists so that code mode's own
    rules (declarations, tool calls, failures, timeouts, approval) are tested on any event loop,
    the virtual clock included. Use :class:`MontyRuntime`, or another isolate, for anything else.

    The code's ``print`` is captured (nothing reaches stdout); each line printed is a log. A
    call that waits for a person waits in place (nothing pauses: there is nothing to free).
    Cancelling a run cancels the code where it awaits (a tool call, a sleep).
    """

    async def run(
        self,
        code: str,
        names: Sequence[str],
        call: Call,
        *,
        approval: Approval | None = None,
        max_log_length: int = MAX_LOG_LENGTH,
        stubs: str | None = None,
    ) -> tuple[JsonValue, list[str]]:
        """Run ``code`` here, unisolated; see :meth:`CodeRuntime.run`.

        Raises:
            ValueError: ``stubs`` were given: this runtime has no type checker.
        """
        if stubs is not None:
            raise ValueError("InProcessRuntime cannot type-check code: use MontyRuntime")
        logs = Logs(max_log_length)

        def capture(
            *values: object, sep: str | None = " ", end: str | None = "\n", **_: object
        ) -> None:
            logs.write((sep if sep is not None else " ").join(map(str, values)))
            logs.write(end if end is not None else "\n")

        source = "async def __run__():\n" + function_body(code)
        scope: dict[str, object] = {
            "tools": _Tools(names, call, approval),
            "ToolError": ToolError,
            "print": capture,
        }
        try:
            exec(compile(source, "<code>", "exec"), scope)  # tests only: see the docstring
        except SyntaxError as error:
            line = (error.lineno or 2) - 1
            raise CodeError(f"The code raised SyntaxError: {error.msg} (line {line})") from None
        function = scope["__run__"]
        try:
            value = await function()  # type: ignore[operator]
        except Exception as error:  # the code's own: the model reads it as a CodeError
            lines = [
                number - 1  # the model's line 1 follows the line that opens __run__
                for frame, number in traceback.walk_tb(error.__traceback__)
                if frame.f_code.co_filename == "<code>"
            ]
            where = f" (line {lines[-1]})" if lines else ""
            raise CodeError(
                f"The code raised {type(error).__name__}: {error}{where}", logs=logs.lines()
            ) from error
        return as_json(value, logs.lines()), logs.lines()


class _Tools:
    """``tools`` in process: ``tools.<attribute>`` and ``tools["<name>"]``."""

    def __init__(self, names: Sequence[str], call: Call, approval: Approval | None) -> None:
        self._names = set(names)
        self._by_attribute = {attribute: name for name, attribute in attributes(names).items()}
        self._call = call
        self._approval = approval

    def __getattr__(self, attribute: str) -> Callable[[JsonObject], Awaitable[JsonValue]]:
        if attribute not in self._by_attribute:
            raise AttributeError(f"no tool {attribute!r}")
        return self[self._by_attribute[attribute]]

    def __getitem__(self, name: str) -> Callable[[JsonObject], Awaitable[JsonValue]]:
        if name not in self._names:
            raise KeyError(f"no tool {name!r}")

        async def tool(input: JsonObject) -> JsonValue:
            if self._approval is not None and self._approval.needed(name, input):
                return await self._approval.ask(name, input)
            return await self._call(name, input)

        return tool
