"""``python -m amends_toolkit``: the ``amends-toolkit`` command."""

from __future__ import annotations

import sys

from amends_toolkit.cli import main

sys.exit(main())
