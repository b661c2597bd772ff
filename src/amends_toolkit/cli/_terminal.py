"""The gateway's questions to a person on its terminal (``serve --approve-on-terminal``).

What a question shows comes from the model (a tool's input), so it is made safe to read first
(:func:`shown`): a control or format character cannot move the cursor, clear the screen, hide
text or turn it around, and a long input cannot scroll the question away.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import termios
from typing import TYPE_CHECKING

import anyio

from amends_toolkit._peer import MAX_SHOWN, shown

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject

__all__ = ("MAX_SHOWN", "approval_question", "ask", "has_terminal", "shown")

MAX_ANSWER = 64
"""The most bytes of a person's answer kept; a longer line is no answer (refused)."""
TERMINAL = "/dev/tty"
"""The process's controlling terminal, where :func:`ask` asks."""


def approval_question(name: str, input: JsonObject) -> str:
    """The question about one call: its tool and its input, shown safe."""
    return f"Approve {shown(f'{name} {json.dumps(input, ensure_ascii=False)}')}? [y/N] "


def has_terminal(terminal: str = TERMINAL) -> bool:
    """Whether the process has a controlling terminal now: none under a service manager, and
    none any more once its terminal hung up (the kernel takes it from the whole session)."""
    try:
        descriptor = os.open(terminal, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(descriptor)
    return True


async def ask(question: str, *, terminal: str = TERMINAL) -> bool:
    """Ask ``question`` on the terminal; ``True`` once a person answers ``y`` or ``yes``.

    What was typed before the question answers nothing (it is discarded). With no terminal,
    the question is written to stderr and refused. Cancelling the call withdraws the question,
    saying so on the terminal.
    """
    try:
        # O_NONBLOCK is the new open file's own: the process's stdin and stdout keep theirs.
        descriptor = os.open(terminal, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        sys.stderr.write(question + "(no terminal: refused)\n")
        return False
    try:
        with contextlib.suppress(termios.error):
            termios.tcflush(descriptor, termios.TCIFLUSH)
        await _write(descriptor, question.encode("utf-8"))
        try:
            answer = await _read_line(descriptor)
        except anyio.get_cancelled_exc_class():
            with contextlib.suppress(OSError):
                os.write(descriptor, b"\n(withdrawn: the call ended)\n")
            raise
    except OSError:
        return False  # the terminal went away (hung up): nobody approved
    finally:
        os.close(descriptor)
    return answer.strip().lower() in (b"y", b"yes")


async def _write(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(descriptor, view) :]
        except BlockingIOError:
            await anyio.wait_writable(descriptor)


async def _read_line(descriptor: int) -> bytes:
    """The line a person types; empty if it is longer than ``MAX_ANSWER`` or ends unfinished."""
    line, length = b"", 0
    while True:
        try:
            chunk = os.read(descriptor, 1024)
        except BlockingIOError:
            await anyio.wait_readable(descriptor)
            continue
        length += len(chunk)
        line += chunk[: max(0, MAX_ANSWER - len(line))]
        if b"\n" in chunk:
            return line if length <= MAX_ANSWER else b""
        if not chunk:
            return b""
