"""What a person reads of the demo, piped and on a real pseudo-terminal: no log line of the
embedded servers, tables with their headers, what the host sees under the call it belongs to,
and a call the policy blocked explained to the host (the model's text unchanged)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from .gateway import SRC

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "demo.py"
COMMANDS = {
    "amends-toolkit demo": [sys.executable, "-m", "amends_toolkit", "demo"],
    "examples/demo.py": [sys.executable, str(EXAMPLE)],
}
# CSI and OSC sequences (colours, the cursor moves of rich's spinner), and the carriage returns
# the spinner redraws its line with.
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\r")
# A table's cell borders, as rich draws them on a terminal and as tabs in plain text.
BORDERS = re.compile(r"[\t│┃]")


def piped(command: list[str]) -> tuple[str, str]:
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def on_a_terminal(command: list[str]) -> str:
    """Everything the command writes to a 200-column pseudo-terminal (stdout and stderr, as a
    person sees them), without the escape sequences."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in {"NO_COLOR", "COLUMNS", "LINES"}}
    env |= {"PYTHONPATH": SRC, "TERM": "xterm-256color"}
    written = bytearray()
    try:
        with subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        ) as process:
            os.close(slave)
            slave = -1
            while select.select([master], [], [], 120)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every end of the terminal's slave side is closed
                    break
                if not chunk:
                    break
                written += chunk
            else:
                process.kill()
            assert process.wait(timeout=120) == 0, written[-2000:].decode(errors="replace")
    finally:
        os.close(master)
        if slave != -1:
            os.close(slave)
    return ESCAPES.sub("", written.decode())


def sections(text: str) -> dict[str, list[str]]:
    """The output's lines under each title (a ``== title`` line piped, a rule on a terminal)."""
    found: dict[str, list[str]] = {"": []}
    lines = found[""]
    for line in text.splitlines():
        title = re.fullmatch(r"== (.+)|(.+?) ─{3,}", line.strip())
        if title:
            lines = found.setdefault(title[1] or title[2], [])
        elif line.strip():
            lines.append(line)
    return found


def rows(lines: list[str]) -> list[list[str]]:
    """A table's rows, each a list of its cells (a terminal's ruled lines left out)."""
    return [
        [cell.strip() for cell in BORDERS.split(line) if cell.strip()]
        for line in lines
        if not re.fullmatch(r"[\u2500-\u257f ]+", line)
    ]


def the_call(lines: list[str], call: str) -> list[str]:
    """The lines of one call: its ``->`` line and those under it up to the next call."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"-> {call}"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("-> ")), None)
    return lines[start:end]


def check(text: str) -> None:
    """What a person must read of the demo, wherever its output goes."""
    assert "Error calling tool" not in text
    assert "Traceback" not in text
    assert not re.search(r"\b(ERROR|WARNING|CRITICAL)\b|\d\d:\d\d:\d\d", text)

    found = sections(text)
    turn = rows(found["The toolkit of the turn"])
    assert turn[0] == ["tool", "needs approval"], turn
    assert ["tasks__delete_task", "yes"] in turn
    actors = rows(found["Actors"])
    assert actors[0] == ["source", "queued", "in flight", "restarts", "state"], actors
    assert ["tasks", "0", "0", "0", "running"] in actors

    calls = found["The model's calls, each read as a result"]
    failed = the_call(calls, 'tasks__delete_task({"task_id": 99})')
    assert '"code": "CallFailedError"' in failed[-2]
    assert (
        failed[-1].strip() == "! the host sees CallFailedError from tasks behind tasks__delete_task"
    )
    approved = the_call(calls, 'tasks__delete_task({"task_id": 1})')
    assert approved[1].strip().startswith("? approve tasks__delete_task")
    assert len(the_call(calls, "weather__get_weather")) == 2  # the call and its result

    blocked = the_call(calls, "notes__listNotes")
    assert (
        '{"isFailure": true, "code": "NotFoundError", "message": "There is no such tool.", '
        '"retryable": false}' in blocked[1]
    )
    assert blocked[2].strip() == (
        "! the host: notes__listNotes is blocked by the policy (source notes, tool listNotes); "
        "the model reads NotFoundError"
    )

    locked = found["Without credentials"]
    assert '"code": "AuthenticationError"' in "".join(locked)
    assert (
        locked[-1].strip() == "! the host sees AuthenticationError from weather behind get_weather"
    )
    asked = found["tool_call asks approval as the tool itself would"]
    assert any(line.strip().startswith("? approve tool_call") for line in asked)
    assert "demo-token-not-for-models" not in text


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_the_demo_piped_reads_in_order_with_headers_and_no_log_line(command: list[str]) -> None:
    stdout, stderr = piped(command)
    check(stdout)
    assert stderr.strip() == "amends-toolkit: Discovering the sources' tools ..."


def test_the_demo_on_a_terminal_reads_in_order_with_headers_and_no_log_line() -> None:
    text = on_a_terminal(COMMANDS["amends-toolkit demo"])
    assert "┃ tool" in text  # rich drew its tables
    check(text)


def test_ctrl_c_stops_the_demo_at_once_and_quietly() -> None:
    # issue 32: uvicorn's own handler took SIGINT, so Ctrl-C stopped one embedded server and the
    # demo ran on to its end, each call of that server's sources failing
    with subprocess.Popen(
        COMMANDS["amends-toolkit demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": SRC},
        start_new_session=True,
    ) as process:
        assert process.stderr is not None
        assert process.stderr.readline() == b"amends-toolkit: Discovering the sources' tools ...\n"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr.decode()[-2000:]
    assert not stderr, stderr.decode()[-2000:]
    assert b"UnavailableError" not in stdout
    assert "Actors" not in sections(stdout.decode())


def test_a_reader_gone_ends_the_demo_quietly() -> None:
    # issue 32: `amends-toolkit demo | head` printed uvicorn's traceback of each embedded server
    # (cancelled mid-serve, its lifespan task cancelled when the loop closed), 125 lines
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: deterministically
    try:
        done = subprocess.run(
            COMMANDS["amends-toolkit demo"],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
            env={**os.environ, "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        os.close(write)
    assert done.returncode == 1
    assert not done.stderr, done.stderr.decode()[-2000:]
