"""Reading the library's log records in a test."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


@contextlib.contextmanager
def listening(handler: logging.Handler) -> Iterator[None]:
    """Hand the library's records, DEBUG and up, to ``handler`` inside the block."""
    logger = logging.getLogger("amends_toolkit")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
