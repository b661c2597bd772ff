"""The amends-toolkit demo: the same as ``amends-toolkit demo`` (see ``amends_toolkit.cli._demo``)."""

from __future__ import annotations

import anyio

from amends_toolkit.cli._demo import run_demo

if __name__ == "__main__":
    anyio.run(run_demo)
