"""HTTP operations written by hand, and the source that sends them.

The request rules: a path value is percent-encoded and may not be empty, ``.`` or ``..``; a value
is a string, a number or a boolean; a query may take a list (a key for each value), a header a
list joined by commas; a header value with a character that could add or split a header is
refused; the client's own headers (its credentials) come last and win. See :func:`make` for what
each answer becomes.
"""

from __future__ import annotations

from amends_toolkit.actors._http import AsyncClient, HttpSource, make
from amends_toolkit.protocols.http import Location, Operation, Param, RequestTemplate

__all__ = ("AsyncClient", "HttpSource", "Location", "Operation", "Param", "RequestTemplate", "make")
