"""The package's logger: structlog over the standard library, never configured here."""

from __future__ import annotations

import logging
from typing import Any

import structlog

logging.getLogger("amends_toolkit").addHandler(logging.NullHandler())


def get_logger(name: str) -> Any:
    """A structlog logger writing through ``logging.getLogger(name)``.

    The host configures logging (and structlog, if it likes); the library only emits events with
    constant dotted names (``call.failed``) and their data in fields.
    """
    return structlog.wrap_logger(logging.getLogger(name))
