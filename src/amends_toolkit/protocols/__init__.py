"""The wire protocols the sources speak, and no actors.

``mcp`` (JSON-RPC, Streamable HTTP, stdio) and ``http`` (requests, bounded bodies, statuses):
what goes over a wire and how it is read, bounded. What a source does with it lives in ``actors``.
"""
