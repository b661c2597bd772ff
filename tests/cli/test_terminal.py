"""The approval question a person reads on the gateway's terminal, asked on a real pseudo-terminal."""

from __future__ import annotations

import contextlib
import json
import os
import unicodedata
from typing import TYPE_CHECKING

import anyio
import mcp_types as types
import pytest
from mcp import Client

from amends_toolkit.cli._terminal import MAX_ANSWER, MAX_SHOWN, approval_question, ask, shown
from conformance._servers import serve

from .gateway import GatewayProcess
from .upstream import tasks_app

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    from amends_toolkit._json import JsonObject

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("delete task 7", "delete task 7"),
        ("été ✓ 日本語 🙂 ﬁ", "été ✓ 日本語 🙂 ﬁ"),
        ("\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07"),
        ("\x00\x08\t\n\r\x7f", "\\x00\\x08\\x09\\x0a\\x0d\\x7f"),
        ("\u009b31m\u0085\u009d", "\\x9b31m\\x85\\x9d"),
        ("\u202eevil\u202c", "\\u202eevil\\u202c"),
        ("\u202a\u202b\u202d", "\\u202a\\u202b\\u202d"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),
        ("a\u200bb\u200c\u200d\u2060\ufeff\u00ad", "a\\u200bb\\u200c\\u200d\\u2060\\ufeff\\xad"),
        ("\U000e0041\U000e007f", "\\U000e0041\\U000e007f"),
        ("line\u2028paragraph\u2029", "line\\u2028paragraph\\u2029"),
        ("\ud800\ue000\U0010fffd", "\\ud800\\ue000\\U0010fffd"),
        ("\u0378", "\\u0378"),  # unassigned
    ],
)
def test_a_character_that_is_not_plain_text_is_shown_as_its_escape(
    text: str, expected: str
) -> None:
    assert shown(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abcd", "abcd"),
        ("abcde", "abcd... (1 more characters not shown)"),
        ("\x1b" * 200_000, "\\x1b" * 4 + "... (199,996 more characters not shown)"),
    ],
)
def test_what_is_past_the_limit_is_cut_saying_how_much(text: str, expected: str) -> None:
    assert shown(text, limit=4) == expected


def test_a_200_kb_question_with_every_kind_of_trick_is_shown_short_and_plain() -> None:
    tricks = "\x1b[2J\u009b31m\u202e\u2066\u200b\r\n\x7f\U000e0041"
    question = approval_question(
        "tasks__delete\u202e_task",
        shown(json.dumps({"task_id": 1, "note" + tricks: tricks * 20_000}, ensure_ascii=False)),
    )
    assert question.startswith("Approve tasks__delete\\u202e_task {")
    assert question.endswith(" more characters not shown)? [y/N] ")
    assert len(question) < 11 * MAX_SHOWN
    assert not [c for c in question if unicodedata.category(c)[0] in "CZ" and c != " "]


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    """A pseudo-terminal: its master end (non-blocking) and its slave's path."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    try:
        yield master, os.ttyname(slave)
    finally:
        os.close(master)
        os.close(slave)


async def read_until(master: int, end: bytes) -> bytes:
    seen = b""
    while end not in seen:
        try:
            seen += os.read(master, 65_536)
        except BlockingIOError:
            await anyio.wait_readable(master)
    return seen


@contextlib.asynccontextmanager
async def asking(
    path: str, question: str = "Approve t {}? [y/N] "
) -> AsyncIterator[tuple[list[bool | None], anyio.CancelScope]]:
    """``ask`` running in a task over the block: its result (once it ends) and a scope that
    withdraws it. If ``ask`` ends first, the rest of the block is skipped."""
    results: list[bool | None] = []
    body = anyio.CancelScope()
    async with anyio.create_task_group() as tasks:

        async def run() -> None:
            try:
                results.append(await ask(question, terminal=path))
            finally:
                body.cancel()

        tasks.start_soon(run)
        with body:
            yield results, tasks.cancel_scope


async def answered(terminal: tuple[int, str], typed: bytes) -> tuple[bool | None, bytes]:
    """What ``ask`` returns when a person types ``typed`` once the question shows, and what
    the terminal showed up to the question's end."""
    master, path = terminal
    seen = b""
    async with asking(path) as (results, _):
        seen = await read_until(master, b"[y/N] ")
        os.write(master, typed)
    return results[0], seen


@pytest.mark.both_backends
@pytest.mark.parametrize(
    ("typed", "approved"),
    [
        (b"y\n", True),
        (b"YES\n", True),
        (b" y \n", True),
        (b"n\n", False),
        (b"\n", False),
        (b"yes please\n", False),
        (b"y" + b" " * MAX_ANSWER + b"\n", False),
        (b"\x04", False),  # end of input (Ctrl-D)
    ],
)
async def test_a_person_answers_on_the_terminal(
    terminal: tuple[int, str], typed: bytes, approved: bool
) -> None:
    result, seen = await answered(terminal, typed)
    assert result is approved
    assert seen.endswith(b"Approve t {}? [y/N] ")


async def test_what_was_typed_before_the_question_answers_nothing(
    terminal: tuple[int, str],
) -> None:
    master, _ = terminal
    os.write(master, b"y\n")
    # Its echo: the terminal has taken the line in, ready to be read.
    assert await read_until(master, b"\n") == b"y\r\n"
    assert await answered(terminal, b"\n") == (False, b"Approve t {}? [y/N] ")


async def test_a_withdrawn_question_says_so_and_keeps_no_reader_for_the_next(
    terminal: tuple[int, str],
) -> None:
    master, path = terminal
    async with asking(path, "Approve first? [y/N] ") as (results, withdraw):
        await read_until(master, b"[y/N] ")
        withdraw.cancel()
    assert results == []
    assert await answered(terminal, b"y\n") == (
        True,
        b"\r\n(withdrawn: the call ended)\r\nApprove t {}? [y/N] ",
    )


@pytest.mark.both_backends
async def test_a_terminal_that_hangs_up_decides_nothing() -> None:
    master, slave = os.openpty()
    os.set_blocking(master, False)
    try:
        async with asking(os.ttyname(slave)) as (results, _):
            await read_until(master, b"[y/N] ")
            os.close(master)
    finally:
        os.close(slave)
    assert results == [None]


async def test_without_a_terminal_the_question_is_written_to_stderr_and_nobody_decides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await ask("Approve t {}? [y/N] ", terminal="/nonexistent/tty") is None
    assert capsys.readouterr().err == "Approve t {}? [y/N] (no terminal: not asked)\n"


async def answered_call(
    client: Client, master: int, input: JsonObject, typed: bytes
) -> tuple[types.CallToolResult, bytes]:
    """A call through the gateway, and what its terminal showed once ``typed`` answered it
    (nothing, if the call ended without a question)."""
    results: list[types.CallToolResult] = []
    seen = b""
    reading = anyio.CancelScope()
    async with anyio.create_task_group() as tasks:

        async def call() -> None:
            try:
                results.append(await client.call_tool("tasks__delete_task", input))
            finally:
                reading.cancel()

        tasks.start_soon(call)
        with reading:
            seen = await read_until(master, b"[y/N] ")
            os.write(master, typed)
    return results[0], seen


async def test_the_gateway_asks_its_own_terminal_showing_a_hostile_question_safe(
    tmp_path: Path,
) -> None:
    master, slave = os.openpty()
    os.set_blocking(master, False)
    hostile: JsonObject = {
        "task_id": 1,
        "note\u202e\u2066": "\u009b2J\x1b]0;x\x07\r\nApprove? " + "x" * 200_000,
    }
    with serve(tasks_app()) as port:
        config = tmp_path / "gateway.toml"
        config.write_text(
            f"""
[[sources]]
name = "tasks"
mcp = "http://127.0.0.1:{port}/mcp"

[policy]
allow = ["tasks__list_tasks"]
approve = ["tasks__delete_*"]
block = ["tasks__secret", "tasks__grow", "tasks__slow"]

[auth]
type = "none"
"""
        )
        gateway = GatewayProcess(config, "--approve-on-terminal", terminal=slave)
        try:
            url = await anyio.to_thread.run_sync(gateway.wait_ready)
            async with Client(url, cache=None) as client:
                approved, shown = await answered_call(client, master, hostile, b"y\n")
                refused, shown_again = await answered_call(client, master, hostile, b"n\n")
        finally:
            gateway.stop()
            os.close(master)
            os.close(slave)
    assert not approved.is_error
    assert refused.is_error
    calls = [e for e in gateway.events("gateway.call") if e["tool"] == "tasks__delete_task"]
    assert [(e["decision"], e["outcome"]) for e in calls] == [
        ("approved by terminal", "ok"),
        ("denied", "ApprovalDenied"),
    ]
    assert "did not approve" in " ".join(
        block.text for block in refused.content if isinstance(block, types.TextContent)
    )
    for question in (shown, shown_again):
        text = question.decode("utf-8").rsplit("\n", 1)[-1]  # after the last answer's echo
        assert text.startswith('Approve tasks__delete_task {"task_id": 1, "note\\u202e\\u2066": "')
        # C1 (U+009B) escaped here; the C0 controls, by json.dumps itself.
        assert '"\\x9b2J\\u001b]0;x\\u0007\\r\\nApprove? xxx' in text
        assert text.endswith(" more characters not shown)? [y/N] ")
        assert not [c for c in text if unicodedata.category(c)[0] in "CZ" and c != " "]
        assert len(question) < 11 * MAX_SHOWN
