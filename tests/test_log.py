"""The docs' logging recipe works: with it, a host's console shows each event's fields (and a
defect's traceback), which the standard formatter leaves out. The test runs the recipe's file,
docs/examples/logging_setup.py, which the Logging guide shows."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import amends_toolkit as at
from amends_toolkit.testing import RecordingSource, raising

RECIPE = Path(__file__).parents[1] / "docs" / "examples" / "logging_setup.py"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def console(capsys: pytest.CaptureFixture[str]) -> Iterator[pytest.CaptureFixture[str]]:
    logger = logging.getLogger("amends_toolkit")
    handlers, level = list(logger.handlers), logger.level
    try:
        yield capsys
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)


CRASH = (
    "import sys\n"
    "print('files server 1.0 starting', file=sys.stderr)\n"
    "import files_server_dependency\n"
)


@pytest.mark.anyio
async def test_the_docs_recipe_shows_each_events_fields(
    console: pytest.CaptureFixture[str],
) -> None:
    exec(compile(RECIPE.read_text(), str(RECIPE), "exec"), {})
    source = at.mcp.stdio(name="files", command=sys.executable, args=["-c", CRASH])
    async with at.Runtime() as runtime:
        files = await runtime.spawn(source, restart=at.Restart(intensity=0))
        with pytest.raises(at.UnavailableError):
            await files.discover()
    shown = ANSI.sub("", console.readouterr().err)
    [ended] = [line for line in shown.splitlines() if "mcp.stdio_ended" in line]
    assert ended.startswith("[warning  ] mcp.stdio_ended")
    assert "exit='exit code 1'" in ended
    assert "reason='the server process closed its output'" in ended
    assert "source=files" in ended
    assert "'files server 1.0 starting'" in ended
    assert "ModuleNotFoundError: No module named 'files_server_dependency'" in ended
    # The crash of the actor says itself: shown in its words, without a traceback.
    [crashed] = [line for line in shown.splitlines() if "actor.crashed" in line]
    assert "error='ProcessEnded: the server process closed its output" in crashed, crashed
    # A defect is shown with its traceback, plain (no frame's locals).
    buggy = RecordingSource("buggy", {"boom": raising(RuntimeError("a bug in the source"))})
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(buggy)
        with pytest.raises(at.UnknownError):
            await ref.call("boom", {})
    shown = ANSI.sub("", console.readouterr().err)
    assert "call.defect" in shown
    assert "Traceback (most recent call last):" in shown
    assert "RuntimeError: a bug in the source" in shown
    assert "╭" not in shown  # rich's frames, each with a table of its locals
