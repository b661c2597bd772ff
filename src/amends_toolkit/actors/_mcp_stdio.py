"""The MCP source over stdio: a server run as a subprocess, spoken to in a session.

The actor that runs the source holds :meth:`McpStdioSource.lifespan`, which starts the process
and ends it (stdin closed, then terminate, then kill; bounded and shielded) when the actor stops.
The session begins with ``initialize`` when the source first needs the server, offering
2025-11-25 and taking 2025-06-18, 2025-03-26 or 2024-11-05 if the server answers one of those.
A process that dies crashes the actor, whose supervisor restarts it with a new process; the
calls that were waiting answer ``UnavailableError``.

Its state (the connection, the session's version) is built anew each time the lifespan is
entered, and the session is begun by a message its ``StateLoop`` handles one at a time, so no
lock guards it and concurrent first calls begin it once.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

import anyio
import attrs

from amends_toolkit._json import MAX_DEPTH
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_name
from amends_toolkit._progress import listener
from amends_toolkit._tracing import traced
from amends_toolkit.actors._limits import check_mcp_options
from amends_toolkit.actors._mcp_core import (
    asked_input,
    bounded,
    not_running,
    raised_as_itself,
    session_version,
    tool_failed,
)
from amends_toolkit.actors._mcp_errors import check_input, error_for_rpc
from amends_toolkit.actors._mcp_listen import LIST_CHANGED
from amends_toolkit.actors._mcp_listing import list_tools
from amends_toolkit.actors._mcp_tracing import traced_request
from amends_toolkit.protocols.mcp._jsonrpc import (
    MAX_MESSAGE_BYTES,
    ErrorResponse,
    Notification,
    initialize_params,
)
from amends_toolkit.protocols.mcp._results import (
    Complete,
    ToolFailed,
    call_params,
    progress_relay,
    read_call_result,
)
from amends_toolkit.protocols.mcp._stdio import StdioConnection
from amends_toolkit.runtime import StateLoop
from amends_toolkit.runtime._deadlines import timed_out

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("McpStdioSource", "stdio")

_log = get_logger(__name__)

_T = TypeVar("_T")


@attrs.frozen
class _Begin:
    """Begin the session, unless it is begun."""


@attrs.define(kw_only=True, eq=False)
class _Live:
    """One running process and the session begun in it (``version`` is None until then)."""

    connection: StdioConnection
    loop: StateLoop[_Begin]
    version: str | None = None


class McpStdioSource:
    """An MCP server run as a subprocess, as a tool source; build it with ``at.mcp.stdio``."""

    honours_cancellation = True
    """A cancelled call ends at once (its cleanup bounded): an actor may run it inline."""

    def __init__(
        self,
        *,
        name: str,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
        timeout: float,
        end_timeout: float,
        on_list_changed: Callable[[], None] | None = None,
        max_answer_bytes: int = MAX_MESSAGE_BYTES,
        max_depth: int = MAX_DEPTH,
    ) -> None:
        self._name = name
        self._on_list_changed = on_list_changed
        self._max_answer_bytes = max_answer_bytes
        self._max_depth = max_depth
        self._command = command
        self._args = tuple(args)
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._timeout = timeout
        self._end_timeout = end_timeout
        self._live: _Live | None = None
        self._tokens = itertools.count(1)

    @property
    def name(self) -> str:
        """The source's name, which prefixes its tools' names in an assembly."""
        return self._name

    def __repr__(self) -> str:
        return f"<McpStdioSource {self._name!r} {self._command!r}>"

    async def discover(self) -> list[ToolDefinition]:
        """List the server's tools (every page of ``tools/list``), as the server describes them.

        Raises:
            UnavailableError: the process ended, or gave no answer within ``timeout``.
            InvalidResponseError: an answer that is not MCP, or cursors that never end.
            UnsupportedError: the server speaks no version of MCP the source does.
            RuntimeError: the source is not running (spawn it on an ``at.Runtime``).

        Cancellation stops the request and tells the server with ``notifications/cancelled``.
        """
        return await bounded(self._name, self._timeout, "tools/list", self._list_tools())

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        """Run a tool: its structured content when it gave some, else its content blocks.

        Raises:
            CallFailedError: the tool ran and said it failed (``isError``), in its own words.
            NotFoundError: the server has no such tool.
            InvalidInputError: the server refused the arguments, in its own words.
            UnsupportedError: the tool asks for something the source does not do.
            UnavailableError, InvalidResponseError, RuntimeError: as for ``discover``.

        Cancellation stops the call and tells the server with ``notifications/cancelled``.
        """
        check_input(self._name, input, max_depth=self._max_depth)
        return await bounded(self._name, self._timeout, "tools/call", self._call(tool, input))

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Held while the actor runs: the server process lives as long as it is held.

        Leaving it ends the process (stdin closed, then terminate, then kill; bounded and
        shielded, so it runs even when the actor is cancelled).

        Raises:
            OSError: the command could not be started.
            ProcessEnded: the process ended by itself while held (after the actor's work inside
                was cancelled), so the actor crashes and its supervisor starts a new process.
            RuntimeError: it is held already (one source, one actor).
        """
        if self._live is not None:
            raise RuntimeError(
                f"the stdio source {self._name!r} is running already: spawn a source once"
            )
        with raised_as_itself() as holder:
            async with (
                StdioConnection.open(
                    name=self._name,
                    command=self._command,
                    args=self._args,
                    env=self._env,
                    cwd=self._cwd,
                    write_timeout=self._timeout,
                    close_grace=self._end_timeout,
                    terminate_grace=self._end_timeout,
                    on_notification=self._notified,
                    max_line=self._max_answer_bytes,
                    max_depth=self._max_depth,
                ) as connection,
                anyio.create_task_group() as tasks,
            ):
                live = _Live(
                    connection=connection,
                    loop=StateLoop(lambda _: self._begin(live), name=self._name),
                )
                await tasks.start(live.loop.run)
                self._live = live
                try:
                    with holder.hold(tasks):
                        yield
                finally:
                    self._live = None

    def _notified(self, method: str) -> None:
        if method == LIST_CHANGED and self._on_list_changed is not None:
            _log.info("mcp.tools_changed", source=self._name)
            self._on_list_changed()

    async def _ready(self) -> StdioConnection:
        """The connection, its session begun (once, however many calls ask at the same time)."""
        live = self._live
        if live is None:
            raise not_running("stdio", self._name)
        if live.version is None:
            await live.loop.ask(_Begin())
        return live.connection

    async def _begin(self, live: _Live) -> None:
        """Handle :class:`_Begin` (only the loop calls it), bounded by ``timeout``."""
        if live.version is not None:
            return
        with anyio.move_on_after(self._timeout):
            live.version = await self._begin_session(live.connection)
            return
        raise timed_out(self._name, "initialize", "source's timeout", self._timeout)

    async def _begin_session(self, connection: StdioConnection) -> str:
        reply = await connection.request("initialize", initialize_params(), cancellable=False)
        if isinstance(reply, ErrorResponse):
            raise error_for_rpc(self._name, reply, method="initialize")
        version = session_version(self._name, reply.result)
        await connection.notify("notifications/initialized")
        _log.info("mcp.session_begun", source=self._name, version=version, transport="stdio")
        return version

    async def _result(
        self,
        method: str,
        params: JsonObject,
        on_notification: Callable[[Notification], Awaitable[None]] | None = None,
    ) -> JsonObject:
        connection = await self._ready()
        tracer = traced()
        if tracer is None:
            reply = await connection.request(method, params, on_notification=on_notification)
        else:
            tool = params.get("name") if method == "tools/call" else None
            reply = await traced_request(
                tracer,
                method,
                tool if isinstance(tool, str) else None,
                params,
                functools.partial(connection.request, method, on_notification=on_notification),
                transport="pipe",
                session=lambda: (None if self._live is None else self._live.version, None),
            )
        if isinstance(reply, ErrorResponse):
            raise error_for_rpc(self._name, reply, method=method)
        return reply.result

    async def _list_tools(self) -> list[ToolDefinition]:
        # x-mcp-header marks are an HTTP matter: over stdio tools are listed as they are.
        listed, _ = await list_tools(
            self._name, functools.partial(self._result, "tools/list"), check_marks=False
        )
        return [tool.definition for tool in listed.values()]

    async def _call(self, tool: str, arguments: JsonObject) -> JsonValue:
        # Progress is asked of the server only when someone listens (none asked, none kept).
        on_progress = listener()
        if on_progress is None:
            params, relay = call_params(tool, arguments), None
        else:
            token = next(self._tokens)
            params = call_params(tool, arguments, progress_token=token)
            relay = progress_relay(on_progress, token)
        outcome = read_call_result(await self._result("tools/call", params, relay))
        if isinstance(outcome, Complete):
            return outcome.value
        if isinstance(outcome, ToolFailed):
            raise tool_failed(self._name, outcome)
        # input_required is of the stateless protocol; a session server has no business with it.
        raise asked_input(self._name, tool)


def stdio(
    *,
    name: str,
    command: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
    end_timeout: float = 2.0,
    on_list_changed: Callable[[], None] | None = None,
    max_answer_bytes: int = MAX_MESSAGE_BYTES,
    max_depth: int = MAX_DEPTH,
) -> McpStdioSource:
    """The source of an MCP server run as a subprocess, spoken to over its stdin and stdout.

    The process starts when an actor runs the source (``await runtime.spawn(source)``) and ends
    when the actor stops; a process that dies is started again by the actor's supervisor.

    Args:
        name: The source's name, which prefixes its tools' names in an assembly.
        command: The program to run, such as ``"uvx"`` or ``sys.executable``; looked up on the
            ``PATH`` the server inherits.
        args: Its arguments, such as ``("mcp-server-time",)``.
        env: Variables to give the server on top of the few it inherits from the host (``PATH``,
            ``HOME``, ``USER``, ``LOGNAME``, ``SHELL``, ``TERM``): the host's other variables,
            its secrets among them, are not passed on. Put a server's key here.
        cwd: The server's working directory (the host's when ``None``).
        timeout: Seconds a discover or a call may take in all, the session's beginning
            included; past it the operation fails as ``UnavailableError`` and the server is
            told the request is cancelled.
        end_timeout: Seconds each step of ending the process is waited for when the actor
            stops: stdin closed, then SIGTERM, then SIGKILL.
        on_list_changed: Called (from the task that reads the server) each time the server
            says its tools changed (``notifications/tools/list_changed``), so a host can
            discover again; it must not block.
        max_answer_bytes: The longest line (one message) read from the server; a longer one is
            read past without being held, and the call it answers fails as ``CallFailedError``
            telling the model to ask for less (a listing as ``InvalidResponseError``).
        max_depth: How deep an answer (and an input) may nest; deeper is
            ``InvalidResponseError`` (an input: ``InvalidInputError``).

    Raises:
        ValueError: an empty name or command, a timeout that is not a positive number, or a
            limit that is not a positive int.
        TypeError: ``args`` given as one string, or ``env`` not a mapping of strings.
    """
    check_name(name, "files")
    if not isinstance(command, str) or not command:
        raise ValueError("command must be the program to run, such as command='uvx'")
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise TypeError("args must be a sequence of strings, such as args=('mcp-server-time',)")
    if not all(isinstance(arg, str) for arg in args):
        raise TypeError("args must hold only strings")
    if env is not None and (
        not isinstance(env, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise TypeError("env must map variable names to string values, such as {'KEY': '...'}")
    if cwd is not None and not isinstance(cwd, str | os.PathLike):
        raise TypeError("cwd must be a path (a string or a pathlib.Path), or None")
    check_mcp_options(
        timeout=timeout,
        end_timeout=end_timeout,
        max_answer_bytes=max_answer_bytes,
        max_depth=max_depth,
        on_list_changed=on_list_changed,
    )
    return McpStdioSource(
        name=name,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        timeout=float(timeout),
        end_timeout=float(end_timeout),
        on_list_changed=on_list_changed,
        max_answer_bytes=max_answer_bytes,
        max_depth=max_depth,
    )
