"""MkDocs hooks of the docs site (mkdocs.yml's ``hooks``).

The docstrings write cross-references in Sphinx's roles (``:class:`~amends_toolkit.Failure```),
which Markdown renders as the role's name before the code. Shown here as the code alone, with a
leading ``~`` meaning the last part of the name, as Sphinx shows it.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj):<code>(~?)([^<]*)</code>")


def _shown(match: re.Match[str]) -> str:
    tilde, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if tilde else name}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    return _ROLE.sub(_shown, html)
