"""The behaviour each kind of source runs as an actor.

One module a kind: ``_mcp`` (MCP over Streamable HTTP, its state with a server in
``_mcp_session``), ``_mcp_stdio`` (MCP over stdio), sharing ``_mcp_core``; ``_http`` (an HTTP
API). Each holds its state in its lifespan and speaks its wire through ``protocols``; the
runtime runs it and knows no kind by name.
"""
