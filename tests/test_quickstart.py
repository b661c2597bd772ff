"""The README's quick start runs as written: its code is examples/quickstart.py, character for
character, and that file, run as a new user would, prints what the README says it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLE = ROOT / "examples" / "quickstart.py"


def blocks() -> list[str]:
    """The code blocks of the README's Quick start section, without their fences' lines."""
    section = README.read_text().split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n", 1)[1] for block in section.split("```")[1::2]]


def test_the_readme_shows_the_quick_start_file_as_it_is() -> None:
    code, _ = blocks()
    assert code == EXAMPLE.read_text()


def test_the_quick_start_runs_and_prints_what_the_readme_says() -> None:
    _, printed = blocks()
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT / "examples",
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == printed
    assert done.stderr == ""
