"""The server process of MCP over stdio: how it is started, and how it is ended.

:func:`start_process` runs the server's command with the part of the host's environment a server
inherits (:func:`default_environment`) and the source's own variables, in a session of its own,
so nothing but its host ends it: not the terminal's hangup, nor its Ctrl-C. A command that cannot
start is a :class:`StartFailed` that names it, the cause and the fix. :func:`stop_process` ends it
as the spec's stdio shutdown says: its stdin is closed, then it is terminated, then killed, each
step waited for a bounded time and shielded from cancellation. :func:`exit_words` says how a
process exited, for the error and the log line of one that died.

The pipes, and the JSON-RPC spoken over them, are :mod:`amends_toolkit.protocols.mcp._stdio`'s;
this module knows no message.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from contextlib import suppress
from typing import TYPE_CHECKING, Final

import anyio

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from anyio.abc import Process

__all__ = (
    "CLOSE_GRACE",
    "TERMINATE_GRACE",
    "StartFailed",
    "default_environment",
    "exit_words",
    "start_process",
    "stop_process",
)

CLOSE_GRACE: Final = 2.0
"""Seconds a server has to exit once its stdin is closed, before it is terminated."""

TERMINATE_GRACE: Final = 2.0
"""Seconds a server has to exit once terminated, before it is killed (and again after)."""

_INHERITED: Final = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)


def default_environment() -> dict[str, str]:
    """The part of the host's environment a server inherits: where programs are, who runs them.

    The host's other variables (its tokens, its keys) are not a server's to read; a source's
    ``env`` adds what a server needs. The official SDKs draw the same line.
    """
    return {
        key: value
        for key in _INHERITED
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }


class StartFailed(OSError):
    """The server's command could not be started; the message says which command and why."""


async def start_process(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
) -> Process:
    """Start the server's command, its stdin, stdout and stderr pipes.

    Shielded: a stop that came while the process starts would leave it running with nobody to
    end it; the caller ends it with :func:`stop_process`, once started.

    Raises:
        StartFailed: the command could not be started (no such file, not executable), an
            ``OSError`` naming the command and why.
    """
    environment = default_environment()
    if env is not None:
        environment.update(env)
    try:
        with anyio.CancelScope(shield=True):
            # A session of its own (as the SDK's stdio client starts one): a hangup of the
            # host's terminal, or its Ctrl-C, never reaches the server; the host ends it.
            process = await anyio.open_process(
                [command, *args], env=environment, cwd=cwd, start_new_session=True
            )
    except OSError as error:
        raise _start_failed(command, cwd, error) from error
    return process


def _start_failed(command: str, cwd: str | os.PathLike[str] | None, error: OSError) -> StartFailed:
    """What a host reads when a server will not start: the command, the cause, the fix."""
    cause = error.strerror or str(error)
    if error.errno == errno.ENOENT and cwd is not None and not os.path.isdir(cwd):
        why = f"its working directory {os.fspath(cwd)!r} does not exist"
    elif error.errno == errno.ENOENT:
        why = f"{cause} (give the program's full path, or install it on the PATH)"
    elif error.errno == errno.EACCES:
        why = f"{cause} (is it an executable file?)"
    else:
        why = cause
    failure = StartFailed(f"could not start the server command {command!r}: {why}")
    failure.errno = error.errno
    return failure


async def stop_process(process: Process, *, close_grace: float, terminate_grace: float) -> None:
    """Close stdin, then terminate, then kill: each step waited for, bounded and shielded."""
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(close_grace):
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await process.stdin.aclose()  # type: ignore[union-attr]
            await process.wait()
        for step in (process.terminate, process.kill):
            if process.returncode is not None:
                break
            with suppress(ProcessLookupError):
                step()
            with anyio.move_on_after(terminate_grace):
                await process.wait()
        with anyio.move_on_after(terminate_grace):
            await process.aclose()


def exit_words(code: int | None) -> str:
    """How a process exited, in words: its exit code, the signal that killed it, or neither."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
