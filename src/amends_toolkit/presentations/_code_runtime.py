"""The code runtime's protocol: what runs the code a model writes in code mode, and what every
runtime shares.

A :class:`CodeRuntime` runs the body of an async function with ``tools`` (each tool an async
function of one dict), ``ToolError`` (what a failed tool call raises) and ``print`` (each line
printed is a log), and gives back what the code returned and its logs. Two ship:
:class:`~amends_toolkit.presentations._in_process.InProcessRuntime` (tests only: it isolates
nothing) and :class:`~amends_toolkit.presentations._monty.MontyRuntime` (a sandbox). What both
use is here too: the output a run keeps (:class:`Logs`), the code as a function's body
(:func:`function_body`), what it returned as JSON (:func:`as_json`), and the attribute each tool
is called by (:func:`attributes`).
"""

from __future__ import annotations

import io
import math
import tokenize
from typing import TYPE_CHECKING, Protocol

from amends_toolkit.presentations._declarations import identifier

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from amends_toolkit._json import JsonObject, JsonValue

    Call = Callable[[str, JsonObject], Awaitable[JsonValue]]

__all__ = (
    "MAX_CODE_LENGTH",
    "MAX_LOG_LENGTH",
    "Approval",
    "CodeError",
    "CodeRuntime",
    "Logs",
    "ToolError",
    "as_json",
    "attributes",
    "function_body",
)

MAX_LOG_LENGTH = 20_000
"""The most characters of printed output a run keeps by default; the rest is counted, not held."""

MAX_CODE_LENGTH = 100_000
"""The most characters of code code mode's ``execute`` takes by default: far past what a model
writes, and little work to make ready (in a worker thread) and to parse (in the sandbox)."""

_MAX_NESTING = 100
"""How deep the value code returns may nest (a deeper one would exhaust the host's stack)."""


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
    """The code failed: it raised, did not compile or type-check, or returned what is not JSON.

    Attributes:
        message: What went wrong, as the model reads it (``"The code raised
            ZeroDivisionError: division by zero (line 2)"``, with the line when known).
        logs: What the code logged before it failed.
    """

    def __init__(self, message: str, *, logs: Sequence[str] = ()) -> None:
        self.message = message
        self.logs = list(logs)
        super().__init__(message)


class Approval(Protocol):
    """Which calls of a run wait for a person, and how the person is asked about one.

    Code mode gives one to the runtime with ``approval="ask"``: the runtime asks
    :meth:`needed` about each call, runs the others with ``call``, and stops the run's own work
    while :meth:`ask` waits (Monty keeps the paused run as bytes and frees its worker).
    """

    def needed(self, name: str, input: JsonObject) -> bool:
        """Whether this call waits for a person (its input is valid and its tool asks so)."""
        ...

    async def ask(self, name: str, input: JsonObject) -> JsonValue:
        """Ask a person about the call and run it if they approve: the tool's answer.

        Raises:
            ToolError: The person refused (``ApprovalDenied``), or the tool failed.
        """
        ...


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
        call: Call,
        *,
        approval: Approval | None = None,
        max_log_length: int = MAX_LOG_LENGTH,
        stubs: str | None = None,
    ) -> tuple[JsonValue, list[str]]:
        """Run ``code``, the body of an async function, and give what it returned and its logs.

        Args:
            code: The body of an async function.
            names: The exact names of the tools the code may call.
            call: Runs one tool, ``call(name, input)``: its answer, or raises :class:`ToolError`.
            approval: Which calls wait for a person, and how to ask (``None``: no call waits).
            max_log_length: The most characters of output kept; past it, the last log line
                says how many characters were dropped.
            stubs: Declarations (a ``.pyi`` text) to type-check the code against before it
                runs: a mistake is a :class:`CodeError` naming its line, and nothing runs. A
                runtime without a type checker raises ``ValueError`` when given them.

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


class Logs:
    """What a run printed, kept up to ``limit`` characters; the rest is counted, not held."""

    def __init__(self, limit: int, *, kept: str = "", dropped: int = 0) -> None:
        self.limit = limit
        self.dropped = dropped
        self._parts = [kept] if kept else []
        self._length = len(kept)

    def write(self, text: str) -> None:
        """Keep what fits of ``text``."""
        room = self.limit - self._length
        if room > 0:
            kept = text[:room]
            self._parts.append(kept)
            self._length += len(kept)
        self.dropped += max(0, len(text) - max(room, 0))

    def print(self, _stream: str, text: str) -> None:
        """Monty's print callback."""
        self.write(text)

    @property
    def kept(self) -> str:
        """The output kept, as one text."""
        return "".join(self._parts)

    def lines(self) -> list[str]:
        """The output kept, line by line, and a last line saying what was dropped."""
        lines = self.kept.splitlines()
        if self.dropped:
            lines.append(
                f"[{self.dropped} more characters of output were dropped: a run keeps"
                f" {self.limit}; print less]"
            )
        return lines


def as_json(value: object, logs: Sequence[str], depth: int = 0) -> JsonValue:
    """``value`` as JSON, tuples read as lists; :class:`CodeError` for anything else."""
    if depth > _MAX_NESTING:
        raise CodeError(
            f"The code returned a value nested more than {_MAX_NESTING} levels deep.", logs=logs
        )
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        try:
            str(value)
        except ValueError:  # past the host's limit on digits
            raise CodeError(
                f"The code returned an integer of {value.bit_length()} bits, too long to write"
                " as JSON: return it as a string, or return less.",
                logs=logs,
            ) from None
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CodeError(f"The code returned {value}, which JSON cannot hold.", logs=logs)
        return value
    if isinstance(value, list | tuple):
        return [as_json(item, logs, depth + 1) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise CodeError("The code returned a dict with a key that is not a string.", logs=logs)
        return {key: as_json(item, logs, depth + 1) for key, item in value.items()}
    raise CodeError(
        f"The code returned a {type(value).__name__}, which is not JSON: return dicts, lists,"
        " strings, numbers, booleans or None.",
        logs=logs,
    )


def function_body(code: str) -> str:
    """``code`` as the body of a function: each line indented, but none inside a string literal.

    A line that continues a multi-line string (or any token spanning lines) keeps its text as
    written, so ``\"\"\"a\\nb\"\"\"`` means the same in the body as in the code.
    """
    lines = io.StringIO(code).readlines()  # the rows tokenize counts: split at "\n" only
    inside: set[int] = set()  # rows (1-based) that begin inside a token
    try:
        for token in tokenize.generate_tokens(iter(lines).__next__):
            (start, _), (end, _) = token.start, token.end
            inside.update(range(start + 1, end + 1))
    except (tokenize.TokenError, SyntaxError):
        pass  # the code does not parse: compiling it says where, with or without this
    body = "".join(
        line if row in inside or not line.strip() else "    " + line
        for row, line in enumerate(lines, start=1)
    )
    return (body if body.endswith("\n") or not body else body + "\n") + "    pass\n"
