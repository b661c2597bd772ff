"""Optional dependencies: the error a host reads when an extra is not installed.

Each names what needed it and the ``pip install`` line that adds it, as reading a YAML document
without PyYAML does.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ("missing_extra", "require_extra")


def _clone() -> str:
    """Where to install an extra from: the package is not on PyPI, so the clone it was
    installed from (an editable install's project), else the placeholder the docs use."""
    root = Path(__file__).resolve().parents[2]
    return str(root) if (root / "pyproject.toml").is_file() else "<this repository>"


_CLONE = _clone()


def missing_extra(
    error: ModuleNotFoundError, *, extra: str, modules: tuple[str, ...], needed_by: str
) -> ModuleNotFoundError:
    """The error to raise for ``error`` when it is one of the extra's ``modules`` that is missing.

    Any other missing module is no missing extra: ``error`` itself comes back, to be raised as is.
    """
    package = (error.name or "").partition(".")[0]
    if package not in modules:
        return error
    return ModuleNotFoundError(
        f"{needed_by} needs the {extra!r} extra ({package} is not installed): "
        f"pip install -e '{_CLONE}[{extra}]'",
        name=package,
    )


def require_extra(*, extra: str, modules: tuple[str, ...], needed_by: str) -> None:
    """Check, without importing them, that the extra's top-level ``modules`` can be imported.

    Raises:
        ModuleNotFoundError: the first that cannot, as :func:`missing_extra` words it.
    """
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise missing_extra(
                ModuleNotFoundError(f"No module named {module!r}", name=module),
                extra=extra,
                modules=modules,
                needed_by=needed_by,
            )
