"""uvicorn as the command runs it: a server inside a program that handles its own signals."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import uvicorn

if TYPE_CHECKING:
    from collections.abc import Generator

__all__ = ("QuietServer",)


class QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: the program that runs it handles signals itself.

    uvicorn's own take SIGINT and SIGTERM from the program while it serves, and only make that
    server stop: a program running two (the demo) went on with one of them gone on Ctrl-C.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield
