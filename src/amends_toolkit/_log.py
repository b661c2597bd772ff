"""The package's logger: structlog over the standard library, never configured here.

Events have constant dotted names (``call.failed``) and their data in fields; they reach the
host's ``logging`` handlers as the record's message and ``extra``, with a real ``exc_info``, so
a traceback is formatted by the host's handler (and never with the frames' local variables,
which may hold a tool's input).
"""

from __future__ import annotations

import logging

import structlog

logging.getLogger("amends_toolkit").addHandler(logging.NullHandler())


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A structlog logger writing through ``logging.getLogger(name)``."""
    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(name),
        processors=[structlog.stdlib.render_to_log_kwargs],
        wrapper_class=structlog.stdlib.BoundLogger,
    )
    return logger
