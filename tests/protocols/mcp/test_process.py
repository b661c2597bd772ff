"""``stop_process``'s three steps, on a virtual clock, against a scripted process that exits at
the step it is told to (a real server that ignores its stdin and SIGTERM is killed in
tests/actors/test_mcp_stdio.py; there anyio's own ``aclose`` would kill it too, so only these
tell each step's part)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import anyio
import pytest

from amends_toolkit.protocols.mcp._process import stop_process

if TYPE_CHECKING:
    from anyio.abc import Process

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_clock]

CLOSE, TERMINATE = 2.0, 3.0


class Scripted:
    """A process that exits at one step: ``"stdin"`` (its input closed), ``"terminate"``, or
    ``"kill"`` (always); every step it is given is in ``steps``."""

    def __init__(self, exits_at: str) -> None:
        self.exits_at = exits_at
        self.steps: list[str] = []
        self.returncode: int | None = None
        self.stdin = self
        self._exited = anyio.Event()

    def _step(self, name: str, code: int) -> None:
        self.steps.append(name)
        if name in (self.exits_at, "kill") and self.returncode is None:
            self.returncode = code
            self._exited.set()

    async def aclose(self) -> None:
        # stdin's aclose first, the process's last (its streams closed, nothing more to wait).
        self._step("stdin" if not self.steps else "aclose", 0)

    def terminate(self) -> None:
        self._step("terminate", -15)

    def kill(self) -> None:
        self._step("kill", -9)

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.returncode is not None
        return self.returncode


@pytest.mark.parametrize(
    ("exits_at", "steps", "seconds"),
    [
        ("stdin", ["stdin", "aclose"], 0.0),
        ("terminate", ["stdin", "terminate", "aclose"], CLOSE),
        ("kill", ["stdin", "terminate", "kill", "aclose"], CLOSE + TERMINATE),
    ],
)
async def test_each_step_is_taken_only_when_the_one_before_did_not_end_the_process(
    exits_at: str, steps: list[str], seconds: float
) -> None:
    process = Scripted(exits_at)
    start = anyio.current_time()
    await stop_process(cast("Process", process), close_grace=CLOSE, terminate_grace=TERMINATE)
    assert process.steps == steps
    assert process.returncode is not None
    assert anyio.current_time() - start == pytest.approx(seconds)


async def test_the_steps_are_taken_even_when_the_stop_is_cancelled() -> None:
    process = Scripted("kill")
    with anyio.CancelScope() as scope:
        scope.cancel()
        await stop_process(cast("Process", process), close_grace=CLOSE, terminate_grace=TERMINATE)
    assert process.steps == ["stdin", "terminate", "kill", "aclose"]
