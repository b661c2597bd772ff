"""Running the checks against a fixture, outside any test framework."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from amends_toolkit._log import get_logger
from amends_toolkit.conformance._checks import CHECKS, Check
from amends_toolkit.conformance._fixture import Fixture, Skipped

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ("Results", "describe", "run")

_log = get_logger(__name__)


@attrs.frozen(kw_only=True)
class Results:
    """The checks that passed and those skipped (each with why) in one :func:`run`."""

    passed: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]


async def run(fixture: Fixture, *, checks: Iterable[Check] = CHECKS) -> Results:
    """Run every check against the sources ``fixture`` makes, one after another.

    Args:
        fixture: makes the source over the three-tool system in each state a check asks for.
        checks: the checks to run, by default every one (``conformance.CHECKS``).

    Returns:
        The checks that passed, and those skipped because the fixture has no system in the state
        they need.

    Raises:
        AssertionError: naming every check that failed, each with what the source did wrong.
            A check that raises anything else fails too, with what it raised.

    Cancellation stops the check that runs and propagates.
    """
    passed: list[str] = []
    skipped: list[tuple[str, str]] = []
    failed: list[str] = []
    for check in checks:
        name = check.__name__
        try:
            await check(fixture)
        except Skipped as why:
            skipped.append((name, str(why)))
        except Exception as error:  # noqa: BLE001 - the report names it; run goes on to the others
            failed.append(f"{name}: {describe(error)}")
        else:
            passed.append(name)
        _log.debug("conformance.checked", check=name)
    if failed:
        raise AssertionError(
            f"{len(failed)} of {len(passed) + len(skipped) + len(failed)} conformance checks "
            "failed:\n" + "\n".join(f"- {line}" for line in failed)
        )
    return Results(passed=tuple(passed), skipped=tuple(skipped))


def describe(error: BaseException) -> str:
    """What a failed check says: its message, or what it raised, for each error in a group."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    if isinstance(error, AssertionError):
        return str(error)
    return f"raised {type(error).__name__}: {error}"
