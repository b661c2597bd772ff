"""MCP over stdio: a server run as a subprocess that speaks newline-delimited JSON-RPC.

One :class:`StdioConnection` is one process. Messages go to its stdin and come from its stdout,
one JSON document a line, each at most ``max_line`` bytes (a longer one is read past, not held,
and fails the request it answers); its stderr is read as it comes (so the server never blocks on
a full pipe) and logged at DEBUG, each line cut to :data:`MAX_STDERR_LINE` bytes; its last
:data:`STDERR_TAIL` lines are kept, so that a process that dies says why. A reader task
routes each answer to the request that waits for it by id, answers a server's ``ping`` (and
refuses its other requests with the error the spec gives), and lets notifications go.

The connection knows nothing of sessions or tools: :mod:`amends_toolkit.actors._mcp_stdio`
drives it. How the process is started and ended (its environment, its session of its own, the
spec's stdio shutdown) is :mod:`amends_toolkit.protocols.mcp._process`'s. The connection's
failures are :class:`~amends_toolkit.protocols.mcp._process.StartFailed` (the command could not
be started, saying which and why), :class:`ProcessEnded` (no answer will ever come; for a
process that died by itself, its exit code and the last lines of its stderr, which a WARNING log
line carries too) and :class:`~amends_toolkit.protocols.mcp._jsonrpc.ProtocolError` (an answer
that is not MCP).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import deque
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Final

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from amends_toolkit._log import get_logger
from amends_toolkit.protocols._body import AnswerTooLarge
from amends_toolkit.protocols.mcp._jsonrpc import (
    METHOD_NOT_FOUND,
    ErrorResponse,
    Message,
    Notification,
    ProtocolError,
    Request,
    RequestId,
    Response,
    decode,
    encode,
    error_response,
    notification,
    request,
    result_response,
)
from amends_toolkit.protocols.mcp._process import (
    CLOSE_GRACE,
    TERMINATE_GRACE,
    exit_words,
    start_process,
    stop_process,
)

if TYPE_CHECKING:
    import os
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

    from anyio.abc import ByteReceiveStream, Process
    from anyio.streams.memory import MemoryObjectSendStream

    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("MAX_STDERR_LINE", "STDERR_TAIL", "ProcessEnded", "StdioConnection")

_log = get_logger(__name__)

MAX_STDERR_LINE: Final = 4096
"""The most of one stderr line that is logged; the rest of a longer line is logged apart."""

STDERR_TAIL: Final = 10
"""How many of the last stderr lines a process that died is reported with."""

NOTES_BUFFER: Final = 64
"""Notifications a request that reads them holds before it has read them; more are dropped."""
CANCEL_NOTICE_TIMEOUT: Final = 1.0
"""The longest a cancelled request waits to send its ``notifications/cancelled``."""

ENDING_GRACE: Final = 1.0
"""Seconds a process whose output ended has to exit and finish its stderr, so that its exit
code and last words reach the error."""

_PEEK: Final = 256
# Where an answer too long to read names its request: first (as Python SDKs write it) or last
# (as the TypeScript SDK writes it).
_ID_FIRST: Final = re.compile(rb'\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"[^"\\]*")')
_ID_LAST: Final = re.compile(rb'"id"\s*:\s*(-?\d+|"[^"\\]*")\s*\}\s*$')


class ProcessEnded(ConnectionError):
    """The server process ended, closed its output, or stopped reading: no answer will come.

    A ``ConnectionError``, as a broken pipe is: the pipes are the connection to the server, and
    their end is the server's failure, not the code's (the runtime logs a crash it causes in its
    words, without a traceback)."""


class _Pending:
    """A request that waits for its answer (or for the end of the process)."""

    __slots__ = ("done", "error", "notes", "reply")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.reply: Response | ErrorResponse | None = None
        self.error: Exception | None = None
        self.notes: MemoryObjectSendStream[Notification] | None = None

    def settle(self, reply: Response | ErrorResponse | None, error: Exception | None) -> None:
        if not self.done.is_set():
            self.reply, self.error = reply, error
            self.done.set()


class StdioConnection:
    """A running server process and the requests that wait for its answers.

    Open it with :meth:`open`; send with :meth:`request` and :meth:`notify` from any task.
    """

    def __init__(
        self,
        process: Process,
        *,
        name: str,
        write_timeout: float,
        on_notification: Callable[[str], None] | None = None,
        max_line: int,
        max_depth: int,
    ) -> None:
        self._process = process
        self._on_notification = on_notification
        self._name = name
        self._write_timeout = write_timeout
        self._max_line = max_line
        self._max_depth = max_depth
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, _Pending] = {}
        self._write_lock = anyio.Lock()
        self._ended: str | None = None
        self._closing = False
        self._crash: str | None = None
        self._scope: anyio.CancelScope | None = None
        self._gone = anyio.Event()
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._stderr_ended = anyio.Event()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        *,
        name: str,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
        write_timeout: float,
        close_grace: float = CLOSE_GRACE,
        terminate_grace: float = TERMINATE_GRACE,
        on_notification: Callable[[str], None] | None = None,
        max_line: int,
        max_depth: int,
    ) -> AsyncIterator[StdioConnection]:
        """Start the server and hold it; at the end, end it (bounded and shielded).

        ``on_notification`` is told the method of each notification the server sends.

        Raises:
            StartFailed: the command could not be started (no such file, not executable), an
                ``OSError`` naming the command and why.
            ProcessEnded: on leaving, when the process ended by itself while it was held: the
                body was cancelled (so every request in it ended) and its holder should fail.
        """
        process = await start_process(command, args, env=env, cwd=cwd)
        connection = cls(
            process,
            name=name,
            write_timeout=write_timeout,
            on_notification=on_notification,
            max_line=max_line,
            max_depth=max_depth,
        )
        _log.info("mcp.stdio_started", source=name, pid=process.pid)
        try:
            async with anyio.create_task_group() as tasks:
                connection._scope = tasks.cancel_scope
                tasks.start_soon(connection._read_stdout)
                tasks.start_soon(connection._read_stderr)
                try:
                    yield connection
                finally:
                    connection._closing = True
                    await stop_process(
                        process, close_grace=close_grace, terminate_grace=terminate_grace
                    )
                    _log.info("mcp.stdio_stopped", source=name, returncode=process.returncode)
                    tasks.cancel_scope.cancel()
        finally:
            connection._settle_all("the server process was stopped")
        if connection._crash is not None:
            raise ProcessEnded(connection._crash)

    @property
    def pid(self) -> int:
        """The server process's id."""
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The process's exit code once it has ended, else ``None``."""
        return self._process.returncode

    async def request(
        self,
        method: str,
        params: JsonObject,
        *,
        cancellable: bool = True,
        on_notification: Callable[[Notification], Awaitable[None]] | None = None,
    ) -> Response | ErrorResponse:
        """Send a request and wait for its answer.

        A cancelled request (a timeout, a caller gone) tells the server with
        ``notifications/cancelled`` unless ``cancellable`` is false (``initialize`` must not be
        cancelled, says the spec), then lets the cancellation go on. ``on_notification`` reads,
        in order and before the request returns, the notifications the server sends while the
        request waits (a call's progress); past ``NOTES_BUFFER`` unread ones, more are dropped.

        Raises:
            ProcessEnded: the process ended before it answered.
            ProtocolError: the answer for this request could not be read as MCP.
            AnswerTooLarge: the answer for this request was a line longer than ``max_line``.
        """
        id = next(self._ids)
        pending = _Pending()
        self._pending[id] = pending
        try:
            await self._send(request(id, method, params))
            if on_notification is None:
                await pending.done.wait()
            else:
                await self._wait_reading(pending, on_notification)
        except anyio.get_cancelled_exc_class():
            if cancellable and not pending.done.is_set() and self._ended is None:
                await self._notify_cancelled(id)
            raise
        finally:
            del self._pending[id]
        if pending.error is not None:
            raise pending.error
        assert pending.reply is not None  # settled with a reply or an error, never neither
        return pending.reply

    async def _wait_reading(
        self, pending: _Pending, on_notification: Callable[[Notification], Awaitable[None]]
    ) -> None:
        notes, reading = anyio.create_memory_object_stream[Notification](NOTES_BUFFER)
        pending.notes = notes

        async def read() -> None:
            async with reading:
                async for note in reading:
                    await on_notification(note)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            try:
                await pending.done.wait()
            finally:
                # The notes sent before the answer are read before the request returns.
                pending.notes = None
                notes.close()

    async def notify(self, method: str, params: JsonObject | None = None) -> None:
        """Send a notification.

        Raises:
            ProcessEnded: the process ended or does not read its input.
        """
        await self._send(notification(method, params))

    async def _notify_cancelled(self, id: RequestId) -> None:
        with anyio.move_on_after(CANCEL_NOTICE_TIMEOUT, shield=True), suppress(ProcessEnded):
            await self.notify(
                "notifications/cancelled", {"requestId": id, "reason": "the caller gave up"}
            )

    async def _send(self, message: Mapping[str, JsonValue], *, by_reader: bool = False) -> None:
        if self._ended is not None:
            raise ProcessEnded(self._ended)
        line = encode(message) + b"\n"
        async with self._write_lock:
            # A caller whose time is up writes nothing.
            await anyio.lowlevel.checkpoint_if_cancelled()
            broken = False
            # A write cut by a cancellation would leave half a message on the pipe and every
            # later message unreadable: it runs to its end, or ends the process. Its end is the
            # caller's deadline when that comes first, so no call outlives its own timeout.
            deadline = min(
                anyio.current_time() + self._write_timeout, anyio.current_effective_deadline()
            )
            with anyio.CancelScope(shield=True) as scope:
                scope.deadline = deadline
                try:
                    await self._process.stdin.send(line)  # type: ignore[union-attr]
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    broken = True
            if broken:
                if not by_reader:
                    # A closed input most often means a process that died: its output ends
                    # next, and the reader then says how (exit code, stderr). Bounded.
                    with anyio.move_on_after(2 * ENDING_GRACE, shield=True):
                        await self._gone.wait()
                self._end("the server process closed its input")
                raise ProcessEnded(self._ended)
            if scope.cancelled_caught:
                self._end("the server process did not read its input in time")
                raise ProcessEnded(self._ended)

    # The reader tasks.

    async def _read_stdout(self) -> None:
        why = "the server process closed its output"
        line = bytearray()
        head: bytes | None = None  # the start of a line too long to hold, while it is read past
        tail = b""
        while True:
            try:
                chunk = await self._stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
            start = 0
            # Each chunk is scanned once: reading is linear in what the server writes.
            while (end := chunk.find(b"\n", start)) != -1:
                piece = chunk[start:end]
                start = end + 1
                if head is not None:
                    self._too_long(head, (tail + piece)[-_PEEK:])
                    head, tail = None, b""
                elif len(line) + len(piece) > self._max_line:
                    self._too_long(bytes(line[:_PEEK]) + piece[:_PEEK], piece[-_PEEK:])
                    line.clear()
                else:
                    line += piece
                    await self._dispatch(bytes(line).rstrip(b"\r"))
                    line.clear()
            rest = chunk[start:]
            if head is not None:
                tail = (tail + rest)[-_PEEK:]
            elif len(line) + len(rest) > self._max_line:
                head, tail = (bytes(line[:_PEEK]) + rest[:_PEEK])[:_PEEK], rest[-_PEEK:]
                line.clear()
            else:
                line += rest
        if not self._closing:
            # How it ended, and its last words: the exit code and the rest of its stderr.
            with anyio.move_on_after(ENDING_GRACE):
                await self._process.wait()
                await self._stderr_ended.wait()
        self._end(why)

    def _too_long(self, head: bytes, tail: bytes) -> None:
        """A line longer than ``max_line`` was read past: the request it answers fails.

        Its id is where SDKs write it, first or last; failing that, a lone waiting request is
        the one it answers. The process goes on.
        """
        pending = self._named(head, tail)
        if pending is None and len(self._pending) == 1:
            pending = next(iter(self._pending.values()))
        _log.warning("mcp.stdio_line_too_long", source=self._name, limit=self._max_line)
        if pending is not None:
            pending.settle(None, AnswerTooLarge(self._max_line))

    def _named(self, head: bytes, tail: bytes) -> _Pending | None:
        """The waiting request a line names, read from the line's first and last bytes."""
        found = _ID_FIRST.match(head) or _ID_LAST.search(tail)
        if found is None:
            return None
        try:
            id = json.loads(found.group(1))
        except ValueError:
            return None
        return self._pending.get(id) if isinstance(id, int | str) else None

    async def _read_stderr(self) -> None:
        try:
            await self._read_stderr_lines()
        finally:
            self._stderr_ended.set()

    async def _read_stderr_lines(self) -> None:
        stream = BufferedByteReceiveStream(self._stderr)
        while True:
            try:
                line = await stream.receive_until(b"\n", MAX_STDERR_LINE)
            except anyio.DelimiterNotFound:
                line = await stream.receive(MAX_STDERR_LINE)
            except (
                anyio.IncompleteRead,
                anyio.EndOfStream,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
            ):
                return
            # One read may bring a longer line whole: it is logged in bounded pieces.
            for start in range(0, len(line), MAX_STDERR_LINE):
                text = line[start : start + MAX_STDERR_LINE].decode(errors="replace").rstrip("\r")
                if text.strip():
                    _log.debug("mcp.stdio_stderr", source=self._name, line=text)
                    self._stderr_tail.append(text)

    @property
    def _stdout(self) -> ByteReceiveStream:
        assert self._process.stdout is not None  # opened with pipes
        return self._process.stdout

    @property
    def _stderr(self) -> ByteReceiveStream:
        assert self._process.stderr is not None  # opened with pipes
        return self._process.stderr

    async def _dispatch(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            messages = decode(line, max_depth=self._max_depth)
        except ProtocolError as error:
            self._garbage(line, error)
            return
        for message in messages:
            await self._receive(message)

    async def _receive(self, message: Message) -> None:
        if isinstance(message, Response | ErrorResponse):
            pending = self._pending.get(message.id) if message.id is not None else None
            if pending is not None:
                pending.settle(message, None)
            elif isinstance(message, ErrorResponse) and message.id is None:
                _log.warning(
                    "mcp.stdio_error_without_id",
                    source=self._name,
                    code=message.code,
                    error=message.message,
                )
            else:
                _log.debug("mcp.stdio_unmatched_answer", source=self._name, id=message.id)
        elif isinstance(message, Request):
            await self._answer(message)
        elif isinstance(message, Notification):
            _log.debug("mcp.stdio_notification", source=self._name, method=message.method)
            for pending in self._pending.values():
                if pending.notes is not None:
                    with suppress(anyio.WouldBlock):
                        pending.notes.send_nowait(message)
            if self._on_notification is not None:
                self._on_notification(message.method)

    async def _answer(self, message: Request) -> None:
        """A server's ``ping`` is answered as the spec asks; its other requests are refused."""
        if message.method == "ping":
            reply = result_response(message.id, {})
        else:
            _log.info("mcp.server_request_refused", source=self._name, method=message.method)
            reply = error_response(message.id, METHOD_NOT_FOUND, "Method not found")
        with suppress(ProcessEnded):
            await self._send(reply, by_reader=True)

    def _garbage(self, line: bytes, error: ProtocolError) -> None:
        """A line that is no JSON-RPC: the request it names (if any) fails, else it is skipped.

        The spec forbids a server to write anything else to stdout, but servers that print a
        banner or a stray line are common; one such line must not end every call.
        """
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            value = None
        id = value.get("id") if isinstance(value, dict) else None
        pending = self._pending.get(id) if isinstance(id, int | str) else None
        if pending is None:
            pending = self._named(line[:_PEEK], line[-_PEEK:])
        if pending is not None:
            pending.settle(None, error)
            return
        _log.warning("mcp.stdio_garbage", source=self._name, length=len(line), error=str(error))
        _log.debug(
            "mcp.stdio_garbage_line", source=self._name, line=line[:1000].decode(errors="replace")
        )

    # Ending.

    def _end(self, why: str) -> None:
        """No answer will come any more: every waiter is told; unless the holder is ending the
        process, the holder's task group is cancelled so the holder fails with :class:`ProcessEnded`."""
        if self._ended is None:
            self._ended = why if self._closing else self._crashed(why)
            # Waiters are told before the holder is cancelled, so that a waiting request reads
            # why rather than its cancellation.
            self._settle_all(self._ended)
            if not self._closing:
                self._crash = self._ended
                if self._scope is not None:
                    self._scope.cancel()
            self._gone.set()
        self._settle_all(self._ended)

    def _crashed(self, why: str) -> str:
        """What the host reads of a process that ended by itself: why, how it exited, and its
        last lines of stderr; logged at WARNING too, since the host may never call again."""
        code, tail = self._process.returncode, list(self._stderr_tail)
        _log.warning(
            "mcp.stdio_ended", source=self._name, reason=why, exit=exit_words(code), stderr=tail
        )
        said = "\n".join(f"  | {line}" for line in tail)
        told = f"the last lines of its stderr:\n{said}" if tail else "nothing on its stderr"
        return f"{why} ({exit_words(code)}); {told}"

    def _settle_all(self, why: str) -> None:
        if self._ended is None:
            self._ended = why
        for pending in self._pending.values():
            pending.settle(None, ProcessEnded(why))
