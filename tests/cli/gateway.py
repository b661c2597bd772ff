"""A gateway process for tests: ``amends-toolkit serve`` run as a subprocess, and its output."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio

SRC = str(Path(__file__).resolve().parents[2] / "src")
_SERVING = re.compile(r"serving (\d+) tools at (http://\S+)")


UPSTREAM = Path(__file__).with_name("upstream.py")
"""The upstream MCP server the gateway tests run (``grower__add`` and more), over stdio or HTTP."""
NO_AUTH = '[auth]\ntype = "none"\n'


def grower_config(
    directory: Path,
    *,
    auth: str = NO_AUTH,
    allow: tuple[str, ...] = ("grower__*",),
    block: tuple[str, ...] = (),
    **serve: Any,
) -> Path:
    """A gateway over one stdio source (``grower``: ``grower__add`` and more) with this policy,
    this ``[auth]`` table and these ``[serve]`` options, written to ``directory/gateway.toml``."""
    options = "\n".join(f"{key} = {json.dumps(value)}" for key, value in serve.items())
    config = directory / "gateway.toml"
    config.write_text(
        f"""
[[sources]]
name = "grower"
stdio = [{json.dumps(sys.executable)}, {json.dumps(str(UPSTREAM))}, "stdio"]
env = {{ PYTHONPATH = {json.dumps(os.pathsep.join(sys.path))} }}

[policy]
allow = {json.dumps(list(allow))}
block = {json.dumps(list(block))}

[serve]
{options}

{auth}
"""
    )
    return config


_ON_TERMINAL = (
    "import fcntl, os, signal, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "signal.signal(signal.SIGHUP, getattr(signal, sys.argv[1])); "
    "os.execvp(sys.argv[2], sys.argv[2:])"
)


def on_terminal(argv: list[str], *, sighup: Literal["SIG_DFL", "SIG_IGN"] = "SIG_DFL") -> list[str]:
    """``argv`` run first through a step that, in a new session, makes its stdin (a
    pseudo-terminal's slave) its controlling terminal and sets SIGHUP to ``sighup``.

    SIGHUP is set because an ignored signal is inherited through fork and exec: a test runner
    started under ``nohup`` would otherwise start every process on a terminal as ``nohup`` does,
    and a gateway started so outlives its terminal, as it should.
    """
    return [sys.executable, "-c", _ON_TERMINAL, sighup, *argv]


class GatewayProcess:
    """``python -m amends_toolkit serve CONFIG --port 0``; its stderr is collected line by line.

    With ``terminal`` (a pseudo-terminal's slave descriptor), the gateway runs in a session of
    its own whose controlling terminal (``/dev/tty``) and stdin that terminal is, with SIGHUP
    set to ``sighup`` (see :func:`on_terminal`).
    """

    def __init__(
        self,
        config: Path,
        *extra: str,
        env: dict[str, str] | None = None,
        terminal: int | None = None,
        sighup: Literal["SIG_DFL", "SIG_IGN"] = "SIG_DFL",
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        environment = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
        command = [sys.executable, "-m", "amends_toolkit", "serve", str(config), "--port", "0"]
        if terminal is not None:
            command = on_terminal(command, sighup=sighup)
        self.process = subprocess.Popen(
            [*command, *extra],
            stdin=subprocess.DEVNULL if terminal is None else terminal,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
            start_new_session=terminal is not None,
            preexec_fn=preexec_fn,
        )
        self.lines: list[str] = []
        self.url: str | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            found = _SERVING.search(line)
            if found:
                self.url = found[2]
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout: float = 60.0) -> str:
        """The MCP endpoint's URL once the gateway listens."""
        self._ready.wait(timeout)
        if self.url is None:
            raise AssertionError("the gateway did not start:\n" + "\n".join(self.lines))
        return self.url

    @property
    def base(self) -> str:
        assert self.url is not None
        return self.url.rsplit("/", 1)[0]

    def events(self, name: str) -> list[dict[str, Any]]:
        """The structured log lines of one event."""
        found = []
        for line in list(self.lines):
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("event") == name:
                    found.append(record)
        return found

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then the exit status; past ``timeout`` it is killed (and TimeoutExpired
        raised). Its stderr is closed either way."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        """Kill it if it still runs, and close its stderr: a test that failed midway leaves
        no process and no open pipe (which a later test's ``filterwarnings`` would meet)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._reader.join(5)
        assert self.process.stderr is not None
        self.process.stderr.close()


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]], *, within: float = 20.0
) -> None:
    """Wait (``within`` seconds at most) until a condition on another process holds: it has no
    event to wait on."""
    with anyio.fail_after(within):
        while True:
            held = condition()
            if not isinstance(held, bool):
                held = await held
            if held:
                return
            await anyio.sleep(0.05)
