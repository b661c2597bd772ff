"""MCP on the wire, without actors: JSON-RPC, tool listings, call results, header rules.

The modules here are transport-independent except ``_sse`` and ``_http`` (Streamable HTTP),
``_stdio`` (JSON-RPC over a subprocess's pipes) and ``_process`` (that subprocess's start and end). The sources in ``amends_toolkit.actors`` drive them.
"""

from __future__ import annotations
