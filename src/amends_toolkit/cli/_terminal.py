"""The gateway's questions to a person on its terminal (``serve --approve-on-terminal``).

The terminal is an approver of out-of-band approvals (``cli/_approvals.py``): each pending
approval is asked here, one at a time. What a question shows comes from the model (a tool's
input), so it is made safe to read first (:func:`~amends_toolkit._peer.shown`, as a pending
approval keeps it): a control or format character cannot move the cursor, clear the screen,
hide text or turn it around, and a long input cannot scroll the question away.
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios

import anyio

from amends_toolkit._peer import MAX_SHOWN, shown

__all__ = ("MAX_SHOWN", "approval_question", "ask", "has_terminal", "shown")

MAX_ANSWER = 64
"""The most bytes of a person's answer kept; a longer line is no answer (refused)."""
MAX_TOOL_SHOWN = 200
"""The most characters of a tool's name a question shows."""
TERMINAL = "/dev/tty"
"""The process's controlling terminal, where :func:`ask` asks."""


def approval_question(tool: str, input_shown: str) -> str:
    """The question about one call: its tool, shown safe, and its input as a pending approval
    keeps it (already shown safe and cut: ``PendingApproval.input_shown``)."""
    return f"Approve {shown(tool, limit=MAX_TOOL_SHOWN)} {input_shown}? [y/N] "


def has_terminal(terminal: str = TERMINAL) -> bool:
    """Whether the process has a controlling terminal now: none under a service manager, and
    none any more once its terminal hung up (the kernel takes it from the whole session)."""
    try:
        descriptor = os.open(terminal, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(descriptor)
    return True


async def ask(question: str, *, terminal: str = TERMINAL) -> bool | None:
    """Ask ``question`` on the terminal; ``True`` once a person answers ``y`` or ``yes``,
    ``False`` for any other answer, ``None`` when nobody could answer (no terminal, or it
    hung up): then no person decided.

    What was typed before the question answers nothing (it is discarded). With no terminal,
    the question is written to stderr, saying nobody was asked. Cancelling the call withdraws
    the question, saying so on the terminal.
    """
    try:
        # O_NONBLOCK is the new open file's own: the process's stdin and stdout keep theirs.
        descriptor = os.open(terminal, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        sys.stderr.write(question + "(no terminal: not asked)\n")
        return None
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
        return None  # the terminal went away (hung up): nobody decided
    finally:
        os.close(descriptor)
    if answer is None:
        # The input ended: a person's Ctrl-D (no), or the terminal hung up (nobody decided).
        return False if has_terminal(terminal) else None
    return answer.strip().lower() in (b"y", b"yes")


async def _write(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(descriptor, view) :]
        except BlockingIOError:
            await anyio.wait_writable(descriptor)


async def _read_line(descriptor: int) -> bytes | None:
    """The line a person types; empty if it is longer than ``MAX_ANSWER``; ``None`` if the
    input ends before the line does."""
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
            return None
