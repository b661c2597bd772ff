"""``conformance_tests`` makes one pytest item per check, skips what the fixture cannot do, and
holds known failures to strict xfail."""

from __future__ import annotations

import pytest

from amends_toolkit import conformance
from amends_toolkit.conformance.pytest_plugin import conformance_tests

from ._broken import RefusedCredentialsAreUnavailable
from ._reference import ReferenceFixture, ReferenceSource


@pytest.fixture
def conformance_fixture() -> ReferenceFixture:
    return ReferenceFixture()


@pytest.fixture
def refusal_is_unavailable() -> ReferenceFixture:
    return ReferenceFixture(RefusedCredentialsAreUnavailable)


test_reference_source = conformance_tests()

test_a_known_failure_fails = conformance_tests(
    "refusal_is_unavailable",
    checks=[conformance.refused_credentials_are_authentication_errors],
    known_failures={"refused_credentials_are_authentication_errors": "it maps 401 wrongly"},
)


def test_each_check_is_an_item_named_as_the_check() -> None:
    marks = {mark.name: mark for mark in test_reference_source.pytestmark}  # type: ignore[attr-defined]
    parameters = marks["parametrize"].args[1]
    assert [parameter.id for parameter in parameters] == [
        check.__name__ for check in conformance.CHECKS
    ]
    assert "anyio" in marks


def test_known_failures_must_name_a_check() -> None:
    with pytest.raises(ValueError, match="known_failures names no check: no_such_check"):
        conformance_tests(known_failures={"no_such_check": "why"})


class _Request:
    def __init__(self, fixture: conformance.Fixture) -> None:
        self.fixture = fixture

    def getfixturevalue(self, name: str) -> conformance.Fixture:
        assert name == "conformance_fixture"
        return self.fixture


@pytest.mark.anyio
async def test_a_check_of_a_state_the_fixture_lacks_is_skipped() -> None:
    fixture = ReferenceFixture(ReferenceSource)
    fixture.states = ("working",)
    test = conformance_tests()
    with pytest.raises(pytest.skip.Exception, match="no 'unreachable' system"):
        await test(conformance.unreachable_is_unavailable, _Request(fixture))
