"""Monty: code mode's code run in a sandboxed interpreter in a pool of subprocesses.

:class:`MontyRuntime` runs it in Monty (``pydantic-monty``, the ``monty`` extra), which reaches
nothing of the host but the tools it is given. A run that reaches a call that waits for a person
pauses as a :class:`Paused` snapshot (bytes) and holds no worker until it is resumed, in this
process or another.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import os
import re
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs

from amends_toolkit._extras import missing_extra
from amends_toolkit._json import JsonObject, JsonValue
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_counts
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
    from types import TracebackType
    from typing import Self

    from amends_toolkit.presentations._code_runtime import Approval, Call

    Monty = Callable[..., Awaitable[Any]]

__all__ = (
    "MAX_CALLS",
    "Finished",
    "MontyRuntime",
    "Paused",
    "PendingCall",
    "default_processes",
)

_log = get_logger(__name__)

MAX_CALLS = 1_000
"""The most tool calls a Monty run makes by default (its sandbox's own limit is about this)."""


@attrs.frozen(kw_only=True)
class PendingCall:
    """A call of a paused run that waits for a person: ``tools["<name>"](input)``.

    Attributes:
        id: Monty's id of the call, which answers it on resume.
        name: The tool's exact name.
        input: What the code passed it (checked against the tool's schema).
    """

    id: int
    name: str
    input: JsonObject


@attrs.frozen(kw_only=True)
class Finished:
    """A run that ended: what the code returned, and its logs."""

    value: JsonValue
    logs: list[str]


@attrs.frozen(kw_only=True)
class Paused:
    """A Monty run paused until a person answers its calls: held as bytes, no worker.

    Keep it (:meth:`dump`, :meth:`load`) as long as a person takes, in this process or another,
    and give it to :meth:`MontyRuntime.resume` with an answer for each of ``calls``. Load only
    bytes this library dumped and the host kept: a snapshot is trusted, not checked.

    Attributes:
        snapshot: The sandbox's state, as Monty dumped it.
        calls: The calls the run waits on, in the order the code made them.
        logs: The output kept so far, and ``dropped``, how many characters were not.
        made: The tool calls made so far, counted against the runtime's ``max_calls``.
        max_log_length: The run's ``max_log_length``.
        lines: How many lines the code has (to say where in it a failure is).
    """

    snapshot: bytes
    calls: tuple[PendingCall, ...]
    logs: str = ""
    dropped: int = 0
    made: int = 0
    max_log_length: int = MAX_LOG_LENGTH
    lines: int = 0

    def dump(self) -> bytes:
        """The whole paused run as bytes: a line of JSON, then the snapshot."""
        head = {
            "calls": [[call.id, call.name, call.input] for call in self.calls],
            "logs": self.logs,
            "dropped": self.dropped,
            "made": self.made,
            "maxLogLength": self.max_log_length,
            "lines": self.lines,
        }
        return json.dumps(head, ensure_ascii=True).encode() + b"\n" + self.snapshot

    @classmethod
    def load(cls, data: bytes) -> Paused:
        """A paused run from :meth:`dump`'s bytes.

        Raises:
            ValueError: The bytes are not a dumped paused run.
        """
        head_text, newline, snapshot = data.partition(b"\n")
        try:
            head: Any = json.loads(head_text) if newline else {}
            return cls(
                snapshot=snapshot,
                calls=tuple(
                    PendingCall(id=int(id), name=str(name), input=dict(input))
                    for id, name, input in head["calls"]
                ),
                logs=str(head["logs"]),
                dropped=int(head["dropped"]),
                made=int(head["made"]),
                max_log_length=int(head["maxLogLength"]),
                lines=int(head["lines"]),
            )
        except (ValueError, TypeError, KeyError) as error:
            raise ValueError(f"these bytes are not a paused run: {error}") from None


_PRELUDE = """
ToolError = RuntimeError
async def __tool__(name, input):
    answer = await __call_tool__(name, input)
    if "error" in answer:
        raise ToolError(answer["error"])
    return answer["value"]
class Tools:
{methods}
    def __getitem__(self, name):
        if name not in {names!r}:
            raise KeyError("no tool " + repr(name))
        async def call(input):
            return await __tool__(name, input)
        return call
tools = Tools()
"""

_MAIN = "async def __main__():\n{body}{prelude}await __main__()\n"
"""The model's code as the body of ``__main__``: its line 1 is the feed's line 2."""

_DIAGNOSTIC = re.compile(r"^[^:\n]+:(\d+):\d+: (?:error|warning)\[([\w-]+)\] (.*)$")


_PROCESSES_PER_CPU = 4
_MAX_PROCESSES = 64


def default_processes() -> int:
    """How many workers a :class:`MontyRuntime` runs at most by default: 4 per CPU, at most 64.

    Monty's own default is one per CPU, so that as many runs looping forever kept every other
    run waiting for a worker until they timed out; a worker idles at about 12 MB.
    """
    return min(_MAX_PROCESSES, _PROCESSES_PER_CPU * (os.cpu_count() or 1))


class MontyRuntime:
    """Runs the code in Monty, a sandboxed Python interpreter in a pool of subprocesses.

    Needs the ``monty`` extra (``pip install -e './amends-toolkit[monty]'``). Monty's async client
    runs on asyncio only: under a host on trio, it runs on an asyncio loop of its own in a thread
    that the runtime starts and stops. Use it as an async context manager, which starts the pool
    of workers and stops it::

        async with at.MontyRuntime() as runtime:
            presented = at.code_mode(toolkit, runtime)

    The code reaches nothing of the host: no file (``open`` is ``PermissionError``), no
    environment, no network, no module but those Monty ships; only ``tools``, ``ToolError`` and
    ``print``. Monty speaks a subset of Python: classes cannot inherit and exceptions hold one
    string, so ``ToolError`` in Monty is ``RuntimeError`` and ``str(error)`` is
    ``"<code>: <message>"`` (no ``code`` attribute). Each run has a worker of its own; a
    cancelled run kills its worker (the pool starts another), so code that loops forever stops.

    The pool has more workers than the machine has CPUs (:func:`default_processes`), and each is
    a process the OS time-slices: runs that loop forever share the CPUs with the others until
    their ``timeout``, and fewer of them than ``max_processes`` keep no other run waiting for a
    worker. Past ``max_processes`` runs at once, a run waits for a worker (in code mode the wait
    counts in its ``timeout``). The sandbox holds at most ``max_processes * max_memory``.

    A run makes at most ``max_calls`` tool calls; the next one stops it with a
    :class:`CodeError` that says so. A call that waits for a person (``approval``) pauses the
    run: its state is dumped as bytes (:class:`Paused`) and its worker returns to the pool until
    the person answers; the run then goes on in whichever worker is free (:meth:`start`,
    :meth:`resume` give the paused run to a host that keeps it longer, or elsewhere).

    Args:
        max_memory: The most heap a run may take, in bytes.
        max_processes: The most workers running at once; more runs wait for one. ``None``:
            :func:`default_processes`.
        max_calls: The most tool calls one run may make.
    """

    def __init__(
        self,
        *,
        max_memory: int = 256 * 1024 * 1024,
        max_processes: int | None = None,
        max_calls: int = MAX_CALLS,
    ) -> None:
        if max_processes is None:
            max_processes = default_processes()
        check_counts(max_processes=max_processes, max_calls=max_calls)
        self._max_memory = max_memory
        self.max_processes = max_processes
        self.max_calls = max_calls
        self._pool: Any = None
        self._apart: _AsyncioThread | None = None

    async def __aenter__(self) -> Self:
        try:
            import pydantic_monty
        except ModuleNotFoundError as error:
            raise missing_extra(
                error, extra="monty", modules=("pydantic_monty",), needed_by="at.MontyRuntime"
            ) from error

        if not _on_asyncio():
            self._apart = _AsyncioThread()
        pool = pydantic_monty.AsyncMonty(max_processes=self.max_processes)
        try:
            await self._monty(pool.__aenter__)
        except BaseException:
            self._close_apart()
            raise
        self._pool = pool
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        pool, self._pool = self._pool, None
        try:
            if pool is not None:
                await self._monty(pool.__aexit__, exc_type, exc, traceback)
        finally:
            self._close_apart()

    async def _monty(self, step: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """Take a step of Monty's asyncio client where it runs: here, or on its own loop."""
        if self._apart is None:
            return await step(*args, **kwargs)
        return await self._apart.run(step, *args, **kwargs)

    def _close_apart(self) -> None:
        apart, self._apart = self._apart, None
        if apart is not None:
            apart.close()

    @property
    def entered(self) -> bool:
        """Whether the runtime is entered (its pool of workers running)."""
        return self._pool is not None

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
        """Run ``code`` in a Monty worker; see :meth:`CodeRuntime.run`.

        A call that waits for a person pauses the run (:meth:`start`), ``approval.ask`` answers
        it while no worker is held, and the run resumes (:meth:`resume`) until it finishes.

        Raises:
            CodeError: As :meth:`CodeRuntime.run` says; also past ``max_calls``.
            RuntimeError: The runtime was not entered (``async with``).
        """
        step = await self.start(
            code, names, call, approval=approval, max_log_length=max_log_length, stubs=stubs
        )
        while isinstance(step, Paused):
            assert approval is not None  # only a call that waits for a person pauses
            answers: list[JsonValue | ToolError] = []
            for pending in step.calls:
                try:
                    answers.append(await approval.ask(pending.name, pending.input))
                except ToolError as error:
                    answers.append(error)
            step = await self.resume(step, answers, call, approval=approval)
        return step.value, step.logs

    async def start(
        self,
        code: str,
        names: Sequence[str],
        call: Call,
        *,
        approval: Approval | None = None,
        max_log_length: int = MAX_LOG_LENGTH,
        stubs: str | None = None,
    ) -> Finished | Paused:
        """Run ``code`` until it ends, or until every call it waits on waits for a person.

        Arguments and failures are :meth:`run`'s. A :class:`Paused` run holds no worker: answer
        its calls with :meth:`resume`, on this runtime or another (in another process, from
        :meth:`Paused.dump`'s bytes). Cancelling ``start`` stops the code and its calls.
        """
        pool = self._entered()
        by_name = attributes(names)
        methods = "".join(
            f"    async def {attribute}(self, input):\n"
            f"        return await __tool__({name!r}, input)\n"
            for name, attribute in by_name.items()
        )
        prelude = _PRELUDE.format(methods=methods, names=list(names))
        # linear in the code, yet seconds for megabytes: not on the event loop
        body = await anyio.to_thread.run_sync(function_body, code)
        lines = body.count("\n") - 1  # the code's own, without the closing pass
        logs = Logs(max_log_length)
        async with self._checkout(pool, logs, stubs, lines) as session:
            if stubs is None:  # one feed: the code first, so that its line numbers hold
                source = _MAIN.format(body=body, prelude=prelude)
            else:  # the prelude apart: the checker reads the code against the stubs only
                await self._monty(session.feed_run, prelude, skip_type_check=True)
                source = _MAIN.format(body=body, prelude="")
            snapshot = await self._monty(session.feed_start, source, print_callback=logs.print)
            return await self._drive(snapshot, call, approval, logs, made=0, lines=lines)

    async def resume(
        self,
        paused: Paused,
        answers: Sequence[JsonValue | ToolError],
        call: Call,
        *,
        approval: Approval | None = None,
    ) -> Finished | Paused:
        """Go on with a paused run, each of its calls answered, until it ends or pauses again.

        Args:
            paused: The paused run (:meth:`Paused.load` reads it back from bytes).
            answers: For each of ``paused.calls`` in order, the tool's answer, or the
                :class:`ToolError` the code reads (``ApprovalDenied`` for a refusal), which it
                may catch.
            call: Runs the run's other calls, as for :meth:`start`.
            approval: Which of its later calls wait for a person.

        Raises:
            CodeError: As :meth:`run` says.
            ValueError: Not one answer for each call.
            RuntimeError: The runtime was not entered (``async with``).
        """
        if len(answers) != len(paused.calls):
            raise ValueError(f"{len(paused.calls)} calls wait for an answer, not {len(answers)}")
        pool = self._entered()
        logs = Logs(paused.max_log_length, kept=paused.logs, dropped=paused.dropped)
        async with self._checkout(pool, logs, None, paused.lines) as session:
            snapshot = await self._monty(
                session.load_snapshot, paused.snapshot, print_callback=logs.print
            )
            snapshot = await self._monty(
                snapshot.resume,
                {
                    pending.id: {"return_value": _answer(answer)}
                    for pending, answer in zip(paused.calls, answers, strict=True)
                },
            )
            return await self._drive(
                snapshot, call, approval, logs, made=paused.made, lines=paused.lines
            )

    def _entered(self) -> Any:
        if self._pool is None:
            raise RuntimeError(
                "enter the MontyRuntime (async with at.MontyRuntime() as runtime:) before"
                " running code in it"
            )
        return self._pool

    def _checkout(self, pool: Any, logs: Logs, stubs: str | None, lines: int) -> _Checkout:
        limits = {
            "max_memory": self._max_memory,
            # Monty counts each call twice (made, then answered) and sleeps too; the run's own
            # count of calls (max_calls) is the limit the model reads
            "max_suspensions": 2 * self.max_calls + 100,
        }
        session = pool.checkout(
            limits=limits,
            print_flush_interval=0,
            type_check=stubs is not None,
            type_check_stubs=stubs,
            type_check_format="concise",
        )
        return _Checkout(session, self._monty, logs, self.max_calls, lines)

    async def _drive(
        self,
        snapshot: Any,
        call: Call,
        approval: Approval | None,
        logs: Logs,
        *,
        made: int,
        lines: int,
    ) -> Finished | Paused:
        drive = _Drive(
            call,
            approval,
            logs,
            monty=self._monty,
            made=made,
            max_calls=self.max_calls,
            lines=lines,
        )
        return await drive.run(snapshot)


class _Drive:
    """A stretch of a Monty run: its calls answered until it ends, or waits on a person only.

    Every tool call of the code is answered as a future, so that calls the code gathers run
    concurrently; the sandbox, when all its tasks wait, asks for their answers (a future
    snapshot), and gets those that are ready, or waits for one. When the calls it waits on all
    wait for a person, the run pauses: its snapshot is dumped and the worker let go.
    """

    def __init__(
        self,
        call: Call,
        approval: Approval | None,
        logs: Logs,
        *,
        monty: Monty,
        made: int,
        max_calls: int,
        lines: int,
    ) -> None:
        self._monty = monty
        self._lines = lines
        self._call = call
        self._approval = approval
        self._logs = logs
        self._made = made
        self._max_calls = max_calls
        self._ready: dict[int, object] = {}  # answers not yet given to the sandbox, by call id
        self._running = 0
        self._waiting: list[PendingCall] = []
        self._send, self._receive = anyio.create_memory_object_stream[tuple[int, object]](math.inf)

    async def run(self, snapshot: Any) -> Finished | Paused:
        outcome: Finished | Paused | None = None
        failure: Exception | None = None
        with self._send, self._receive:
            async with anyio.create_task_group() as group:
                try:
                    outcome = await self._loop(snapshot, group)
                except Exception as error:  # noqa: BLE001 - raised below as itself, not in a group
                    failure = error
                group.cancel_scope.cancel()  # calls the code never awaited
        if failure is not None:
            raise failure
        assert outcome is not None
        return outcome

    async def _loop(self, snapshot: Any, group: anyio.abc.TaskGroup) -> Finished | Paused:
        import pydantic_monty as monty

        while True:
            if isinstance(snapshot, monty.MontyComplete):
                logs = self._logs.lines()
                # as large as the sandbox's memory: walked where the event loop is not held
                value = await anyio.to_thread.run_sync(as_json, snapshot.output, logs)
                return Finished(value=value, logs=logs)
            if isinstance(snapshot, monty.AsyncFunctionSnapshot):
                snapshot = await self._called(snapshot, group)
            elif isinstance(snapshot, monty.AsyncFutureSnapshot):
                while True:
                    try:
                        self._take(self._receive.receive_nowait())
                    except anyio.WouldBlock:
                        break
                settled = {
                    call_id: self._ready.pop(call_id)
                    for call_id in snapshot.pending_call_ids
                    if call_id in self._ready
                }
                if settled:
                    snapshot = await self._monty(snapshot.resume, settled)
                elif self._running:
                    self._take(await self._receive.receive())
                else:
                    assert self._waiting  # the sandbox waits on nothing else
                    _log.info("code.paused", calls=len(self._waiting))
                    return Paused(
                        snapshot=snapshot.dump(),
                        calls=tuple(self._waiting),
                        logs=self._logs.kept,
                        dropped=self._logs.dropped,
                        made=self._made,
                        max_log_length=self._logs.limit,
                        lines=self._lines,
                    )
            else:  # a name nobody defined: resumed unbound, the code reads NameError
                snapshot = await self._monty(snapshot.resume)

    async def _called(self, snapshot: Any, group: anyio.abc.TaskGroup) -> Any:
        """The sandbox called a function: answer it, or start what will."""
        name = snapshot.function_name
        if name == "system.sleep":  # a blocking sleep: the whole sandbox waits
            return await self._monty(snapshot.resume, await _slept(snapshot.args))
        if name == "system.async_sleep":
            answer = _slept(snapshot.args)
        elif snapshot.is_os_function:
            return await self._monty(snapshot.resume_not_handled)
        elif name != "__call_tool__":
            return await self._monty(
                snapshot.resume,
                {"exc_type": "NameError", "message": f"name {name!r} is not defined"},
            )
        else:
            self._made += 1
            if self._made > self._max_calls:
                raise _too_many_calls(self._max_calls, self._logs)
            tool, input = (*snapshot.args, None, None)[:2]
            if (
                self._approval is not None
                and isinstance(tool, str)
                and isinstance(input, dict)
                and self._approval.needed(tool, input)
            ):
                self._waiting.append(PendingCall(id=snapshot.call_id, name=tool, input=input))
                return await self._monty(snapshot.resume, {"future": ...})
            answer = _tool_answer(self._call, tool, input)
        self._running += 1
        group.start_soon(self._settle, snapshot.call_id, answer)
        return await self._monty(snapshot.resume, {"future": ...})

    async def _settle(self, call_id: int, answer: Awaitable[object]) -> None:
        self._send.send_nowait((call_id, await answer))

    def _take(self, item: tuple[int, object]) -> None:
        call_id, answer = item
        self._ready[call_id] = answer
        self._running -= 1


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _AsyncioThread:
    """An asyncio loop in a thread of its own, for Monty's client when the host runs on trio.

    Monty's async client runs on asyncio only; every step of it (entering the pool, a feed, a
    resume) runs on this loop, and the host's task waits for it in a worker thread. Cancelling
    the host's wait cancels the step there and waits (bounded) until it has stopped, so that the
    next step (leaving the worker) runs after it.
    """

    _STOP_GRACE = 10.0

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="amends-toolkit-monty", daemon=True
        )
        self._thread.start()

    async def run(self, step: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        async def there() -> Any:  # Monty's coroutines are made on the loop that runs them
            return await step(*args, **kwargs)

        future = asyncio.run_coroutine_threadsafe(there(), self._loop)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except BaseException:
            future.cancel()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(
                    concurrent.futures.wait, [future], self._STOP_GRACE, abandon_on_cancel=True
                )
            raise

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self._STOP_GRACE)
        if not self._thread.is_alive():
            self._loop.close()


def _answer(answer: JsonValue | ToolError) -> dict[str, JsonValue]:
    """What the prelude's ``__tool__`` reads: ``{"value": ...}``, or ``{"error": ...}``."""
    if isinstance(answer, ToolError):
        return {"error": str(answer)}
    return {"value": answer}


async def _tool_answer(call: Call, name: object, input: object) -> object:
    if not isinstance(name, str):
        answer: dict[str, JsonValue] = {"error": f"NotFoundError: There is no tool {name!r}."}
    else:
        try:
            answer = _answer(await call(name, input))  # type: ignore[arg-type]  # call checks it
        except ToolError as error:
            answer = _answer(error)
    return {"return_value": answer}


async def _slept(args: Sequence[object]) -> object:
    seconds = args[0] if args else 0
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        await anyio.sleep(min(float(seconds), 24 * 3600.0))  # the run's timeout bounds it
    return {"return_value": None}


def _too_many_calls(limit: int, logs: Logs) -> CodeError:
    return CodeError(
        f"The code made more than {limit} tool calls, the most one run may make, and was"
        " stopped. Make fewer calls in one run: ask each call for more, or split the work"
        " over several runs.",
        logs=logs.lines(),
    )


class _Checkout:
    """A worker of the pool for one stretch of a run, with Monty's errors read as CodeError."""

    def __init__(self, session: Any, monty: Monty, logs: Logs, max_calls: int, lines: int) -> None:
        self._session = session
        self._monty = monty
        self._logs = logs
        self._max_calls = max_calls
        self._lines = lines

    async def __aenter__(self) -> Any:
        return await self._monty(self._session.__aenter__)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        import pydantic_monty as monty

        await self._monty(self._session.__aexit__, exc_type, exc, traceback)
        if isinstance(exc, monty.MontyError):
            raise self._code_error(exc) from None

    def _code_error(self, error: Exception) -> CodeError:
        import pydantic_monty as monty

        logs = self._logs.lines()
        if isinstance(error, monty.MontyTypingError):
            return CodeError(_typing_message(error.display()), logs=logs)
        if isinstance(error, monty.MontySyntaxError | monty.MontyRuntimeError):
            message = error.display("type-msg")
            if message.startswith("RuntimeError: suspension limit"):
                return _too_many_calls(self._max_calls, self._logs)
            where = _where(error.traceback(), self._lines)
            return CodeError(f"The code raised {message}{where}", logs=logs)
        # a crashed worker (memory): the model reads that its code failed
        _log.warning("code.crashed", error=str(error))
        return CodeError(f"The code stopped: {error}", logs=logs)


def _where(frames: Sequence[Any], lines: int) -> str:
    """Where in the model's code (``lines`` long) a Monty error was, when it was there."""
    if not frames:
        return ""
    main = frames[0].filename  # the feed of __main__ awaits it at its top
    for frame in reversed(frames):
        if frame.filename == main and 1 < frame.line <= lines + 1:
            return f" (line {frame.line - 1})"
    return ""


def _typing_message(diagnostics: str) -> str:
    mistakes: list[str] = []
    for line in diagnostics.splitlines():
        match = _DIAGNOSTIC.match(line)
        if match is not None:
            row, kind, message = match.groups()
            mistakes.append(f"line {int(row) - 1}: {message} [{kind}]")
    if not mistakes:
        mistakes = [diagnostics.strip()]
    return (
        "The code does not type-check against the tools' declarations, so nothing ran:\n"
        + "\n".join(mistakes)
    )
