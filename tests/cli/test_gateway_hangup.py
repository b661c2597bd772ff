"""A gateway on a terminal that closes stops, and ends its stdio children itself; a SIGHUP
while its terminal is there refreshes.

Each gateway runs on a real pseudo-terminal (its controlling terminal), with a real stdio
server behind it; closing the terminal's master end hangs the terminal up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import anyio
import pytest

from .gateway import SRC, GatewayProcess, eventually, grower_config, on_terminal

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return grower_config(tmp_path)


@pytest.fixture(params=["SIG_DFL", "SIG_IGN"], ids=["run-as-is", "run-under-nohup"])
def runner_sighup(request: pytest.FixtureRequest) -> Iterator[None]:
    """The test runner's own SIGHUP as it was started: as is, or ignored (under ``nohup``, whose
    SIG_IGN every process it starts inherits through exec). The gateway's hangup rule is the
    same either way: the tests start it as a person's shell does."""
    before = signal.signal(signal.SIGHUP, getattr(signal, request.param))
    yield
    signal.signal(signal.SIGHUP, before)


@pytest.fixture
def terminal() -> Iterator[list[int]]:
    """A pseudo-terminal's ``[master, slave]``; a test closes the master to hang it up."""
    ends = list(os.openpty())
    yield ends
    for end in ends:
        if end >= 0:
            os.close(end)


def on_slave(
    config: Path, terminal: list[int], *, sighup: Literal["SIG_DFL", "SIG_IGN"] = "SIG_DFL"
) -> GatewayProcess:
    gateway = GatewayProcess(config, terminal=terminal[1], sighup=sighup)
    os.close(terminal[1])  # the gateway holds the slave end now
    terminal[1] = -1
    return gateway


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def exited(gateway: GatewayProcess) -> int:
    """The gateway's exit status; one that does not exit fails the test within a minute."""
    try:
        return await anyio.to_thread.run_sync(gateway.process.wait, 60)
    finally:
        if gateway.process.poll() is None:
            gateway.process.kill()
        gateway.stop()


async def test_a_hangup_stops_the_gateway_which_ends_its_stdio_child_once(
    config: Path, terminal: list[int], runner_sighup: None
) -> None:
    gateway = on_slave(config, terminal)
    await anyio.to_thread.run_sync(gateway.wait_ready)
    (child,) = gateway.events("mcp.stdio_started")
    os.close(terminal[0])
    terminal[0] = -1
    assert await exited(gateway) == 0
    assert [e["reason"] for e in gateway.events("gateway.stopping")] == ["SIGHUP"]
    assert len(gateway.events("mcp.stdio_started")) == 1  # not restarted
    assert [e["returncode"] for e in gateway.events("mcp.stdio_stopped")] == [0]
    assert not gateway.events("mcp.stdio_ended")  # it did not die by itself
    assert not alive(child["pid"])
    assert not any("Traceback" in line for line in gateway.lines)


async def test_a_sighup_while_the_terminal_is_there_refreshes(
    config: Path, terminal: list[int]
) -> None:
    gateway = on_slave(config, terminal)
    try:
        await anyio.to_thread.run_sync(gateway.wait_ready)
        (child,) = gateway.events("mcp.stdio_started")
        gateway.process.send_signal(signal.SIGHUP)
        await eventually(lambda: bool(gateway.events("gateway.refreshed")))
        assert gateway.process.poll() is None
        assert not gateway.events("gateway.stopping")
        assert len(gateway.events("mcp.stdio_started")) == 1
        assert alive(child["pid"])
    finally:
        assert gateway.stop() == 0


async def test_a_gateway_started_with_sighup_ignored_outlives_its_terminal(
    config: Path, terminal: list[int]
) -> None:
    # As under nohup: the hangup refreshes, and the gateway serves on.
    gateway = on_slave(config, terminal, sighup="SIG_IGN")
    try:
        await anyio.to_thread.run_sync(gateway.wait_ready)
        (child,) = gateway.events("mcp.stdio_started")
        os.close(terminal[0])
        terminal[0] = -1
        await eventually(lambda: bool(gateway.events("gateway.refreshed")))
        assert gateway.process.poll() is None
        assert len(gateway.events("mcp.stdio_started")) == 1
        assert alive(child["pid"])
    finally:
        assert gateway.stop() == 0


# As a person runs it: the gateway a foreground job of an interactive bash on the terminal. The
# terminal's hangup reaches bash, which sends SIGHUP to its jobs (their process groups) and
# exits; stderr goes to a file, read as the gateway writes it.
def on_pty(argv: list[str], terminal: list[int], **env: str) -> subprocess.Popen[bytes]:
    """``argv`` in a session of its own whose controlling terminal, stdin, stdout and stderr
    are the terminal's slave (closed here: the process holds it), SIGHUP not ignored."""
    process = subprocess.Popen(
        on_terminal(argv),
        stdin=terminal[1],
        stdout=terminal[1],
        stderr=terminal[1],
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": SRC, **env},
    )
    os.close(terminal[1])
    terminal[1] = -1
    return process


def logged_text(log: Path) -> str:
    return log.read_text() if log.exists() else ""


def logged(log: Path, name: str) -> list[dict[str, object]]:
    lines = logged_text(log).splitlines()
    return [
        record
        for line in lines
        if line.startswith("{")
        and line.endswith("}")
        and (record := json.loads(line)).get("event") == name
    ]


def stat(pid: int) -> list[str]:
    """A process's ``/proc/PID/stat`` fields after its name (state, parent, ...); none once gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return []


def gone(pid: int) -> bool:
    """Whether a process that is not this one's child has ended (a zombie has)."""
    return stat(pid)[:1] in ([], ["Z"], ["X"])


async def test_a_gateway_run_from_bash_stops_when_its_terminal_closes(
    config: Path, terminal: list[int], tmp_path: Path, runner_sighup: None
) -> None:
    log = tmp_path / "gateway.log"
    shell = on_pty(["bash", "--norc", "--noprofile", "-i"], terminal, PS1="$ ")
    command = [sys.executable, "-m", "amends_toolkit", "serve", str(config), "--port", "0"]
    line = f"{shlex.join(command)} </dev/null >/dev/null 2>{shlex.quote(str(log))}\n"
    os.write(terminal[0], line.encode())
    children: list[int] = []
    gateway: list[int] = []
    try:
        # As long as GatewayProcess waits for a gateway starting on a busy machine.
        await eventually(lambda: "serving 2 tools at" in logged_text(log), within=60)
        children = [int(str(e["pid"])) for e in logged(log, "mcp.stdio_started")]
        gateway = [int(stat(children[0])[1])]
        os.close(terminal[0])  # the terminal closes
        terminal[0] = -1
        await anyio.to_thread.run_sync(shell.wait, 60)
        await eventually(lambda: bool(logged(log, "gateway.stopped")))
        assert [e["reason"] for e in logged(log, "gateway.stopping")] == ["SIGHUP"]
        assert len(logged(log, "mcp.stdio_started")) == 1  # not killed, so not restarted
        assert not logged(log, "mcp.stdio_ended")
        assert [e["returncode"] for e in logged(log, "mcp.stdio_stopped")] == [0]
        await eventually(lambda: all(gone(pid) for pid in [*gateway, *children]))
        assert "Traceback" not in log.read_text()
    finally:
        started = [int(str(e["pid"])) for e in logged(log, "mcp.stdio_started")]
        for pid in {*gateway, *children, *started}:
            if not gone(pid):  # a test that failed leaves nothing running
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if shell.poll() is None:
            shell.kill()
            shell.wait()


async def test_a_gateway_writing_to_its_terminal_stops_cleanly_when_it_hangs_up(
    config: Path, terminal: list[int], runner_sighup: None
) -> None:
    # Its stderr is the terminal: what it says after the hangup must not fail (EIO) its stop.
    command = [sys.executable, "-m", "amends_toolkit", "serve", str(config), "--port", "0"]
    gateway = on_pty(command, terminal)
    master = terminal[0]
    try:
        shown = b""
        with anyio.fail_after(60):
            while b"serving 2 tools at" not in shown:
                await anyio.wait_readable(master)
                shown += os.read(master, 65536)
        os.close(master)
        terminal[0] = -1
        assert await anyio.to_thread.run_sync(gateway.wait, 60) == 0
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()
