"""What the command prints for a person: ``rich`` tables and colours on a terminal, plain text
otherwise (a pipe, a log file, ``NO_COLOR``). Notes and errors go to stderr, results to stdout."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from amends_toolkit.runtime import Toolkit

__all__ = ("Output", "silence")


def silence(*descriptors: int) -> None:
    """Point ``descriptors`` at the null device: their reader went away (a pipe's, EPIPE) or
    their terminal hung up (EIO), and what is still written there must not fail."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for descriptor in descriptors:
            os.dup2(null, descriptor)
    finally:
        os.close(null)


class Output:
    """The command's voice. ``rich`` decides from the stream whether it is a terminal."""

    def __init__(self) -> None:
        self.out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
        self.err = Console(file=sys.stderr, highlight=False, soft_wrap=True)

    @property
    def fancy(self) -> bool:
        """Whether stdout is a terminal rich draws on."""
        return self.out.is_terminal

    def note(self, text: str) -> None:
        """A line for the operator, on stderr."""
        self.err.print(
            f"[dim]amends-toolkit:[/dim] {text}"
            if self.err.is_terminal
            else f"amends-toolkit: {text}",
            markup=self.err.is_terminal,
        )

    def error(self, text: str) -> None:
        """A failure, one line, on stderr."""
        if self.err.is_terminal:
            self.err.print(f"[bold red]error:[/bold red] {text}", markup=True, highlight=False)
        else:
            print(f"error: {text}", file=sys.stderr)

    @contextmanager
    def status(self, text: str) -> Iterator[None]:
        """A spinner while something runs (on a terminal), else one line saying it."""
        if self.err.is_terminal:
            with self.err.status(text):
                yield
        else:
            print(f"amends-toolkit: {text} ...", file=sys.stderr)
            yield

    def title(self, text: str) -> None:
        """A section heading on stdout."""
        if self.fancy:
            self.out.rule(f"[bold]{text}", align="left")
        else:
            print(f"\n== {text}")

    def json(self, value: object, *, limit: int | None = None) -> None:
        """JSON on stdout: indented and coloured on a terminal, one line otherwise."""
        text = json.dumps(value, ensure_ascii=False)
        if limit is not None and len(text) > limit:
            print(text[:limit] + " ...")
        elif self.fancy:
            self.out.print_json(text)
        else:
            print(text)

    def line(self, text: str) -> None:
        """A line of a result on stdout."""
        print(text)

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """Rows as a table on a terminal, as tab-separated lines otherwise."""
        if self.fancy:
            table = Table(*columns, show_lines=False)
            for row in rows:
                table.add_row(*row)
            self.out.print(table)
        else:
            for row in rows:
                print("\t".join(row))

    def served(self, url: str, toolkit: Toolkit, *, failed: Mapping[str, str]) -> None:
        """What the gateway serves, once it listens."""
        self.note(f"serving {len(toolkit)} tools at {url}")
        for name, problem in sorted(failed.items()):
            self.error(f"source {name}: {problem}")
