"""Optional dependencies: the error a host reads when an extra is not installed.

Each names what needed it and the ``pip install`` line that adds it, as reading a YAML document
without PyYAML does.
"""

from __future__ import annotations

__all__ = ("missing_extra",)


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
        f"pip install 'amends-toolkit[{extra}]'",
        name=package,
    )
