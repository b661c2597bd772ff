"""Reading OpenAPI 3.0 and 3.1 documents into HTTP operations. No actors, no network."""

from __future__ import annotations

from amends_toolkit.protocols.openapi._document import parse_document, read_document
from amends_toolkit.protocols.openapi._reader import (
    DocumentError,
    ReadResult,
    Skipped,
    read_operations,
)
from amends_toolkit.protocols.openapi._schema import SkipReason

__all__ = (
    "DocumentError",
    "ReadResult",
    "SkipReason",
    "Skipped",
    "parse_document",
    "read_document",
    "read_operations",
)
