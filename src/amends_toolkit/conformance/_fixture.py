"""What a source's tests give the suites: a fixture that makes the source over the three-tool system.

The system serves three tools:

- ``echo``: takes ``{"text": <string>}`` (``text`` required, a string) and answers with that text
  somewhere in its JSON;
- ``failing``: takes ``{}`` and reports that it failed (a ``CallFailedError`` of the source);
- ``blocking``: takes ``{}`` and never answers; the system records that a call arrived and that
  it stopped (:class:`BlockingLog`), so that a check can see an interrupted call end there.
"""

from __future__ import annotations

import threading
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

import attrs

if TYPE_CHECKING:
    import os
    from collections.abc import Collection, Iterator

    from amends_toolkit.runtime import ToolSource

__all__ = ("STATES", "BlockingCalls", "BlockingLog", "Fixture", "Skipped", "State")

State: TypeAlias = Literal["working", "unauthorized", "unavailable", "unreachable"]
"""How the system is for a check: it serves; it refuses the client's credentials (HTTP 401); it
says it is down (HTTP 503, or a process that exits); nothing answers at its address."""

STATES: tuple[State, ...] = ("working", "unauthorized", "unavailable", "unreachable")


@attrs.frozen(kw_only=True)
class BlockingCalls:
    """How many calls of ``blocking`` the system has seen arrive, and how many of them stopped."""

    arrived: int
    stopped: int


class Fixture(Protocol):
    """Makes a source over the three-tool system, in the state a check asks for.

    A source's tests write one and pass it to :func:`~amends_toolkit.conformance.run`. The suites
    open one source per check and state, one after another, and read ``secrets`` and
    ``blocking_calls()`` while a source is open. A source with a lifespan
    (:class:`~amends_toolkit.runtime.Lifespan`, such as a stdio server's process) runs only as an
    actor, so the checks reach it through an ``at.Runtime`` of their own.
    """

    @property
    def states(self) -> Collection[State]:
        """The states this fixture can put its system in. Checks that need another are skipped
        (a stdio server has no credentials to refuse, so it has no ``"unauthorized"``)."""
        ...

    @property
    def secrets(self) -> Collection[str]:
        """Text no model may read: each credential the client carries (the refused one too) and
        each address of the system (``"127.0.0.1:8123"``, a URL, a command's path)."""
        ...

    def blocking_calls(self) -> BlockingCalls:
        """What the system has seen of ``blocking`` so far (read it from a :class:`BlockingLog`)."""
        ...

    def source(self, state: State) -> AbstractAsyncContextManager[ToolSource]:
        """The source over the system in ``state``, closed when the check is done with it."""
        ...


class Skipped(Exception):
    """A check that needs a state the fixture does not have; :func:`run` counts it as skipped."""


class BlockingLog:
    """Where the system's ``blocking`` tool records its calls, for the fixture to read.

    Thread-safe, so a server in another thread can write it. With ``path``, each record is also a
    line appended to that file and :meth:`counts` reads the file, so that a server in another
    process (a stdio server given the path) and the fixture share one log.

    Use it in the tool: ``with log.call(): await anyio.sleep_forever()``.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._arrived = 0
        self._stopped = 0

    @contextmanager
    def call(self) -> Iterator[None]:
        """Record that a call arrived, and that it stopped when the block is left in any way."""
        self._record("arrived")
        try:
            yield
        finally:
            self._record("stopped")

    def _record(self, event: Literal["arrived", "stopped"]) -> None:
        with self._lock:
            if event == "arrived":
                self._arrived += 1
            else:
                self._stopped += 1
            if self._path is not None:
                with self._path.open("a", encoding="utf-8") as file:
                    file.write(event + "\n")

    def counts(self) -> BlockingCalls:
        """The calls recorded so far (by any process writing the same file, with ``path``)."""
        with self._lock:
            if self._path is None:
                return BlockingCalls(arrived=self._arrived, stopped=self._stopped)
            try:
                lines = self._path.read_text(encoding="utf-8").split()
            except FileNotFoundError:
                lines = []
        return BlockingCalls(arrived=lines.count("arrived"), stopped=lines.count("stopped"))
