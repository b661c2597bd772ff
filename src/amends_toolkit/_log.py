"""The package's logger: structlog over the standard library, never configured here.

Events have constant dotted names (``call.failed``) and their data in fields; they reach the
host's ``logging`` handlers as the record's message and ``extra``, with a real ``exc_info``, so
a traceback is formatted by the host's handler (and never with the frames' local variables,
which may hold a tool's input). A text field is cut to :data:`MAX_LOG_FIELD` characters, so a
caller's text (a tool name a client sent) makes no line longer than that.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import structlog

if TYPE_CHECKING:
    from structlog.typing import EventDict, WrappedLogger

__all__ = ("MAX_LOG_FIELD", "get_logger")

MAX_LOG_FIELD: Final = 4_096
"""The most characters of one text field of a log line; a longer one is cut (ending in ``…``).
As long as a stdio server's stderr line is logged in pieces of (``MAX_STDERR_LINE``, bytes), so that a
piece is never cut again."""

logging.getLogger("amends_toolkit").addHandler(logging.NullHandler())


def _bounded(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    for key, value in event.items():
        if isinstance(value, str) and len(value) > MAX_LOG_FIELD:
            event[key] = value[: MAX_LOG_FIELD - 1] + "…"
    return event


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A structlog logger writing through ``logging.getLogger(name)``, its text fields cut."""
    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(name),
        processors=[_bounded, structlog.stdlib.render_to_log_kwargs],
        wrapper_class=structlog.stdlib.BoundLogger,
    )
    return logger
