"""Each check as its own pytest item (pytest and anyio's plugin are a source's test dependencies).

In a source's tests::

    from amends_toolkit.conformance.pytest_plugin import conformance_tests

    @pytest.fixture
    def conformance_fixture() -> MyFixture: ...

    test_my_source = conformance_tests()   # test_my_source[failing_is_call_failed], ...

A check the fixture has no state for is skipped; a failed one fails its item with the check's
message. ``conformance_tests(known_failures={"interrupted_call_stops": "issue 12"})`` holds a
check the source is known to fail to strict ``xfail``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from amends_toolkit.conformance._checks import CHECKS, Check
from amends_toolkit.conformance._fixture import Fixture, Skipped
from amends_toolkit.conformance._run import describe

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping

__all__ = ("conformance_tests",)


def conformance_tests(
    fixture: str = "conformance_fixture",
    *,
    checks: Iterable[Check] = CHECKS,
    known_failures: Mapping[str, str] | None = None,
) -> Callable[..., Awaitable[None]]:
    """A test function, parametrized with one item per check, marked for anyio's plugin.

    Args:
        fixture: the name of the pytest fixture that gives the conformance
            :class:`~amends_toolkit.conformance.Fixture`.
        checks: the checks to turn into items, by default every one.
        known_failures: checks the source is known to fail, by name, each with why (an issue):
            their items are strict ``xfail``, so that they pass once the source is fixed only
            when this entry is taken out.

    Raises:
        ValueError: ``known_failures`` names no check.
    """
    chosen = tuple(checks)
    known = dict(known_failures or {})
    unknown = sorted(set(known) - {check.__name__ for check in chosen})
    if unknown:
        raise ValueError(f"known_failures names no check: {', '.join(unknown)}")
    items = [
        pytest.param(
            check,
            id=check.__name__,
            marks=[
                pytest.mark.xfail(strict=True, raises=AssertionError, reason=known[check.__name__])
            ]
            if check.__name__ in known
            else [],
        )
        for check in chosen
    ]

    @pytest.mark.anyio
    @pytest.mark.parametrize("check", items)
    async def test_conformance(check: Check, request: pytest.FixtureRequest) -> None:
        subject: Fixture = request.getfixturevalue(fixture)
        try:
            await check(subject)
        except Skipped as why:
            pytest.skip(str(why))
        except BaseExceptionGroup as group:
            raise AssertionError(describe(group)) from group

    return test_conformance
