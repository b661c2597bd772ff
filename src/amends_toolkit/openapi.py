"""The operations of an OpenAPI 3.0 or 3.1 document, as HTTP operations a source sends.

``read_operations(document)`` reads a document already read as JSON; ``read_document(path)`` and
``parse_document(text)`` read YAML or JSON. Reading fetches nothing: a ``$ref`` to anything but a
part of the document skips the operations that need it, and the document's ``servers`` are only
listed, since where requests go is the host's to say.
"""

from __future__ import annotations

from amends_toolkit.protocols.openapi import (
    DocumentError,
    ReadResult,
    Skipped,
    SkipReason,
    parse_document,
    read_document,
    read_operations,
)

__all__ = (
    "DocumentError",
    "ReadResult",
    "SkipReason",
    "Skipped",
    "parse_document",
    "read_document",
    "read_operations",
)
