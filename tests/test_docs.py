"""Every code example of the docs site runs here, so the docs cannot rot. A page includes each
example from a file (pymdownx snippets, ``--8<--``); each Python example, and the command lines
of the command-line guide, run as a new user would run them and print what their ``.out`` file
(which the page shows) says; each gateway configuration is one the gateway reads. Code written
in a page itself (Python, TOML) must run, or be read by the gateway, as it is."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import amends_toolkit
from amends_toolkit.cli._config import load_config

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
PAGES = sorted(DOCS.rglob("*.md"))
FENCE = re.compile(r"^ *```(\w+)[^\n]*\n(.*?)^ *```$", re.MULTILINE | re.DOTALL)
SNIPPET = re.compile(r'^ *--8<-- "([^"]+)"$')
# A server the examples start as a subprocess, modules they import, and a set-up another test
# runs (tests/test_log.py).
NOT_PROGRAMS = {
    "tasks_server.py",
    "notes.py",
    "scripted_chat.py",
    "otlp_collector.py",
    "logging_setup.py",
}
PROGRAMS = [ROOT / "examples" / "quickstart.py"] + [
    path for path in sorted(EXAMPLES.glob("*.py")) if path.name not in NOT_PROGRAMS
]


def included(language: str) -> list[tuple[Path, str]]:
    """Each fenced block of ``language`` in the pages, as (page, body)."""
    return [
        (page, body)
        for page in PAGES
        for fenced, body in FENCE.findall(page.read_text())
        if fenced == language
    ]


def written(block: str) -> bool:
    """Whether a block is code written in its page, not lines that include a file."""
    lines = block.strip().splitlines()
    included = [line for line in lines if SNIPPET.match(line)]
    assert not included or len(included) == len(lines), f"code and an include in one block: {block}"
    return not included


# Code written in a page (as a guide another branch adds may have it) must run as it is.
WRITTEN = [
    pytest.param(language, body, id=f"{page.relative_to(DOCS)}:{number}")
    for language in ("python", "toml")
    for number, (page, body) in enumerate(included(language))
    if written(body)
]


@pytest.mark.parametrize("language", ["python", "toml"])
def test_every_file_a_page_includes_is_there(language: str) -> None:
    blocks = [body for _, body in included(language) if not written(body)]
    assert blocks
    for body in blocks:
        for line in body.strip().splitlines():
            match = SNIPPET.match(line)
            assert match
            assert (ROOT / match[1].split(":", 1)[0]).is_file(), match[1]


@pytest.mark.parametrize(("language", "body"), WRITTEN)
def test_code_written_in_a_page_runs_as_it_is(language: str, body: str, tmp_path: Path) -> None:
    """Python runs as a program (in a directory of its own, for the files it writes); a
    gateway configuration is one the gateway reads."""
    if language == "toml":
        (tmp_path / "gateway.toml").write_text(body)
        load_config(tmp_path / "gateway.toml")
        return
    program = tmp_path / "example.py"
    program.write_text(body)
    run([sys.executable, "-W", "error", str(program)], tmp_path)


def test_every_example_file_is_shown_by_a_page() -> None:
    text = "".join(page.read_text() for page in PAGES)
    for path in sorted(EXAMPLES.iterdir()):
        if path.suffix in {".py", ".toml", ".out", ".yaml", ".sh"}:
            assert f'"{path.relative_to(ROOT)}' in text, f"{path.name} is shown by no page"


def run(command: list[str], where: Path) -> subprocess.CompletedProcess[str]:
    """``command`` run in ``where`` as a new user would (this environment's ``python`` and
    ``amends-toolkit`` first on the PATH), which must succeed."""
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=where,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda path: path.name)
def test_each_example_runs_and_prints_what_its_page_shows(program: Path) -> None:
    done = run([sys.executable, "-W", "error", str(program)], program.parent)
    assert done.stderr == ""
    assert done.stdout == (EXAMPLES / f"{program.stem}.out").read_text()


def test_the_command_lines_of_the_docs_print_what_their_page_shows() -> None:
    done = run(["bash", "-e", "command_line.sh"], EXAMPLES)
    assert done.stdout == (EXAMPLES / "command_line.out").read_text()


@pytest.mark.parametrize("config", sorted(EXAMPLES.glob("*.toml")), ids=lambda path: path.name)
def test_each_gateway_configuration_of_the_docs_is_one_the_gateway_reads(config: Path) -> None:
    load_config(config)


def test_the_docstrings_roles_show_as_their_code_alone() -> None:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None
    assert spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    html = (
        "a :class:<code>~amends_toolkit.Failure</code>, :func:<code>amends_toolkit.assemble</code>"
        " and :meth:<code>~Toolkit.call</code>"
    )
    assert hooks.on_page_content(html) == (
        "a <code>Failure</code>, <code>amends_toolkit.assemble</code> and <code>call</code>"
    )


def test_every_public_name_has_its_entry_in_the_reference() -> None:
    reference = "".join(page.read_text() for page in sorted((DOCS / "reference").glob("*.md")))
    entries = set(re.findall(r"^::: amends_toolkit\.(\w+)$", reference, re.MULTILINE))
    assert sorted(set(amends_toolkit.__all__) - entries) == []
