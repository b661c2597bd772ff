"""Code runtimes: what runs the code a model writes in code mode.

A :class:`CodeRuntime` runs the body of an async function with ``tools`` (each tool an async
function of one dict), ``ToolError`` (what a failed tool call raises) and ``print`` (each line
printed is a log), and gives back what the code returned and its logs. Two are here:

- :class:`InProcessRuntime` runs the code in this process with ``exec``: it isolates NOTHING and
  exists for tests.
- :class:`MontyRuntime` runs it in Monty (``pydantic-monty``, the ``monty`` extra), a sandboxed
  interpreter in a subprocess that reaches nothing of the host but the tools it is given.
"""

from __future__ import annotations

import math
import textwrap
import traceback
from typing import TYPE_CHECKING, Protocol

from amends_toolkit._extras import missing_extra
from amends_toolkit._log import get_logger
from amends_toolkit.presentations._declarations import identifier

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from types import TracebackType
    from typing import Self

    from amends_toolkit._json import JsonObject, JsonValue

__all__ = (
    "CodeError",
    "CodeRuntime",
    "InProcessRuntime",
    "MontyRuntime",
    "ToolError",
    "attributes",
)

_log = get_logger(__name__)


class ToolError(Exception):
    """A tool call from code that failed: what ``call`` raises, and what the code catches.

    ``str(error)`` is ``"<code>: <message>"`` in every runtime; ``code`` (the failure's code,
    such as ``"InvalidInputError"``) and ``message`` (what the model reads of it) are attributes
    too where the runtime's exceptions can hold them (in process, not in Monty).
    """

    def __init__(self, *, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class CodeError(Exception):
    """The code failed: it raised, did not compile, or returned what is not JSON.

    Attributes:
        message: What went wrong, as the model reads it (``"ZeroDivisionError: division by
            zero"``, with the line when the runtime knows it).
        logs: What the code logged before it failed.
    """

    def __init__(self, message: str, *, logs: Sequence[str] = ()) -> None:
        self.message = message
        self.logs = list(logs)
        super().__init__(message)


class CodeRuntime(Protocol):
    """What runs the code of code mode: an isolate that reaches nothing but the tools it is given.

    An implementation gives the code ``tools`` (``await tools.<attribute>({...})`` and
    ``await tools["<name>"]({...})``, see :func:`attributes`), ``ToolError`` (raised in the code
    for a ``call`` that raised :class:`ToolError`, catchable there) and ``print`` (each line of
    output a log).
    """

    async def run(
        self,
        code: str,
        names: Sequence[str],
        call: Callable[[str, JsonObject], Awaitable[JsonValue]],
    ) -> tuple[JsonValue, list[str]]:
        """Run ``code``, the body of an async function, and give what it returned and its logs.

        Args:
            code: The body of an async function.
            names: The exact names of the tools the code may call.
            call: Runs one tool, ``call(name, input)``: its answer, or raises :class:`ToolError`.

        Returns:
            What the code returned (``None`` when it returned nothing), and the lines it printed.

        Raises:
            CodeError: The code raised, could not be compiled, or returned what is not JSON.

        Cancelling ``run`` stops the code, and its tool calls with it.
        """
        ...


def attributes(names: Sequence[str]) -> dict[str, str]:
    """The attribute of ``tools`` each name is called by (the first of a clash keeps it)."""
    taken: dict[str, str] = {}
    for name in names:
        taken.setdefault(identifier(name), name)
    return {name: attribute for attribute, name in taken.items()}


def as_json(value: object, logs: Sequence[str]) -> JsonValue:
    """``value`` as JSON, tuples read as lists; :class:`CodeError` for anything else."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CodeError(f"The code returned {value}, which JSON cannot hold.", logs=logs)
        return value
    if isinstance(value, list | tuple):
        return [as_json(item, logs) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise CodeError("The code returned a dict with a key that is not a string.", logs=logs)
        return {key: as_json(item, logs) for key, item in value.items()}
    raise CodeError(
        f"The code returned a {type(value).__name__}, which is not JSON: return dicts, lists,"
        " strings, numbers, booleans or None.",
        logs=logs,
    )


def _line(frames: Sequence[object], offset: int) -> str:
    """Where in the model's code a Monty error was, when it was there."""
    for frame in reversed(frames):
        line = getattr(frame, "line", 0)
        if isinstance(line, int) and line > offset:
            return f" (line {line - offset})"
    return ""


def _lines(text: str) -> list[str]:
    return text.splitlines()


class InProcessRuntime:
    """Runs the code in THIS process with ``exec``. IT ISOLATES NOTHING: TESTS ONLY.

    The code can import anything, read and write files, reach the network and every secret of
    the host: never give it code a model wrote outside a test. It exists so that code mode's own
    rules (declarations, tool calls, failures, timeouts) are tested on any event loop, the
    virtual clock included. Use :class:`MontyRuntime`, or another isolate, for anything else.

    The code's ``print`` is captured (nothing reaches stdout); each line printed is a log.
    Cancelling a run cancels the code where it awaits (a tool call, a sleep).
    """

    async def run(
        self,
        code: str,
        names: Sequence[str],
        call: Callable[[str, JsonObject], Awaitable[JsonValue]],
    ) -> tuple[JsonValue, list[str]]:
        """Run ``code`` here, unisolated; see :meth:`CodeRuntime.run`."""
        output: list[str] = []

        def capture(
            *values: object, sep: str | None = " ", end: str | None = "\n", **_: object
        ) -> None:
            output.append((sep if sep is not None else " ").join(map(str, values)))
            output.append(end if end is not None else "\n")

        source = (
            "async def __run__():\n"
            + (textwrap.indent(code, "    ") or "    pass")
            + "\n    pass\n"
        )
        scope: dict[str, object] = {
            "tools": _Tools(names, call),
            "ToolError": ToolError,
            "print": capture,
        }
        try:
            exec(compile(source, "<code>", "exec"), scope)  # tests only: see the docstring
        except SyntaxError as error:
            raise CodeError(f"SyntaxError: {error.msg} (line {error.lineno})") from None
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
                f"{type(error).__name__}: {error}{where}", logs=_lines("".join(output))
            ) from error
        logs = _lines("".join(output))
        return as_json(value, logs), logs


class _Tools:
    """``tools`` in process: ``tools.<attribute>`` and ``tools["<name>"]``."""

    def __init__(
        self, names: Sequence[str], call: Callable[[str, JsonObject], Awaitable[JsonValue]]
    ) -> None:
        self._names = set(names)
        self._by_attribute = {attribute: name for name, attribute in attributes(names).items()}
        self._call = call

    def __getattr__(self, attribute: str) -> Callable[[JsonObject], Awaitable[JsonValue]]:
        if attribute not in self._by_attribute:
            raise AttributeError(f"no tool {attribute!r}")
        return self[self._by_attribute[attribute]]

    def __getitem__(self, name: str) -> Callable[[JsonObject], Awaitable[JsonValue]]:
        if name not in self._names:
            raise KeyError(f"no tool {name!r}")

        async def tool(input: JsonObject) -> JsonValue:
            return await self._call(name, input)

        return tool


_PRELUDE = """
ToolError = RuntimeError
async def __tool__(name, input):
    answer = await __call_tool__(name, input)
    if "error" in answer:
        raise ToolError(answer["error"])
    return answer["value"]
class __Tools__:
{methods}
    def __getitem__(self, name):
        if name not in {names!r}:
            raise KeyError("no tool " + repr(name))
        async def call(input):
            return await __tool__(name, input)
        return call
tools = __Tools__()
async def __main__():
{code}
    pass
await __main__()
"""


class MontyRuntime:
    """Runs the code in Monty, a sandboxed Python interpreter in a pool of subprocesses.

    Needs the ``monty`` extra (``pip install 'amends-toolkit[monty]'``) and an asyncio event
    loop (Monty's async client runs on asyncio only). Use it as an async context manager, which
    starts the pool of workers and stops it::

        async with at.MontyRuntime() as runtime:
            presented = at.code_mode(toolkit, runtime)

    The code reaches nothing of the host: no file (``open`` is ``PermissionError``), no
    environment, no network, no module but those Monty ships; only ``tools``, ``ToolError`` and
    ``print``. Monty speaks a subset of Python: classes cannot inherit and exceptions hold one
    string, so ``ToolError`` in Monty is ``RuntimeError`` and ``str(error)`` is
    ``"<code>: <message>"`` (no ``code`` attribute). Each run has a worker of its own; a
    cancelled run kills its worker (the pool starts another), so code that loops forever stops.

    Args:
        max_memory: The most heap a run may take, in bytes.
        max_processes: The most workers running at once; more runs wait for one.
    """

    def __init__(
        self, *, max_memory: int = 256 * 1024 * 1024, max_processes: int | None = None
    ) -> None:
        self._max_memory = max_memory
        self._max_processes = max_processes
        self._pool: object | None = None

    async def __aenter__(self) -> Self:
        try:
            import pydantic_monty
        except ModuleNotFoundError as error:
            raise missing_extra(
                error, extra="monty", modules=("pydantic_monty",), needed_by="at.MontyRuntime"
            ) from error

        pool = pydantic_monty.AsyncMonty(max_processes=self._max_processes)
        await pool.__aenter__()
        self._pool = pool
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        import pydantic_monty

        pool, self._pool = self._pool, None
        assert isinstance(pool, pydantic_monty.AsyncMonty)
        await pool.__aexit__(exc_type, exc, traceback)

    async def run(
        self,
        code: str,
        names: Sequence[str],
        call: Callable[[str, JsonObject], Awaitable[JsonValue]],
    ) -> tuple[JsonValue, list[str]]:
        """Run ``code`` in a Monty worker; see :meth:`CodeRuntime.run`.

        Raises:
            CodeError: As :meth:`CodeRuntime.run` says.
            RuntimeError: The runtime was not entered (``async with``).
        """
        import pydantic_monty

        pool = self._pool
        if not isinstance(pool, pydantic_monty.AsyncMonty):
            raise RuntimeError("enter the MontyRuntime (async with) before running code in it")
        by_name = attributes(names)
        methods = "".join(
            f"    async def {attribute}(self, input):\n"
            f"        return await __tool__({name!r}, input)\n"
            for name, attribute in by_name.items()
        )
        source = _PRELUDE.format(
            methods=methods or "    pass\n",
            names=list(names),
            code=textwrap.indent(code, "    "),
        )
        # the model's line 1 is the line after this one
        offset = source[: source.index("async def __main__():\n")].count("\n") + 1
        output: list[str] = []

        async def call_tool(name: object, input: object) -> dict[str, JsonValue]:
            assert isinstance(name, str)  # the prelude passes one of ours
            try:
                value = await call(name, input)  # type: ignore[arg-type]  # call checks it
            except ToolError as error:
                return {"error": str(error)}
            return {"value": value}

        limits: pydantic_monty.ResourceLimits = {"max_memory": self._max_memory}
        async with pool.checkout(limits=limits, print_flush_interval=0) as session:
            try:
                value = await session.feed_run(
                    source,
                    external_lookup={"__call_tool__": call_tool},
                    print_callback=lambda _stream, text: output.append(text),
                )
            except (pydantic_monty.MontySyntaxError, pydantic_monty.MontyRuntimeError) as error:
                message = error.display("type-msg") + _line(error.traceback(), offset)
                raise CodeError(message, logs=_lines("".join(output))) from None
            except pydantic_monty.MontyError as error:
                # a crashed worker (memory): the model reads that its code failed
                _log.warning("code.crashed", error=str(error))
                raise CodeError(
                    f"The code stopped: {error}", logs=_lines("".join(output))
                ) from None
        logs = _lines("".join(output))
        return as_json(value, logs), logs
