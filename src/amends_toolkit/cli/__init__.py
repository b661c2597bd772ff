"""The ``amends-toolkit`` command: ``serve`` (an MCP gateway), ``inspect``, ``call``, ``demo``.

It needs the ``gateway`` extra (``pip install -e './amends-toolkit[gateway]'``): the official ``mcp``
SDK, uvicorn, ``prometheus_client`` and ``rich``.
"""

from __future__ import annotations

from amends_toolkit.cli._main import main

__all__ = ("main",)
