"""Which ``[[profiles]]`` serves a caller: the first whose ``match`` the caller meets.

- ``keys``: a caller of ``[auth] type = "keys"`` by one of these key names.
- ``subjects``: an OAuth caller whose token's ``sub`` is one of these.
- ``scopes``: an OAuth caller whose token holds every one of these scopes.
- ``claims``: an OAuth caller whose token has each of these claims with this value; a claim
  that is a list (``groups = ["eng", "ops"]``) matches when it holds the value.

A caller no profile matches is ``[policy]``'s (:data:`~amends_toolkit.cli._config.DEFAULT_PROFILE`)
when the file has one, and refused otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from amends_toolkit._json import JsonValue
    from amends_toolkit.adapters import Caller
    from amends_toolkit.cli._config import MatchConfig, ProfileConfig

__all__ = ("matches", "profile_of")


def profile_of(profiles: Sequence[ProfileConfig], caller: Caller | None) -> str | None:
    """The name of the first profile that matches ``caller``; ``None`` when none does."""
    if caller is None:
        return None
    return next((p.name for p in profiles if matches(p.match, caller)), None)


def matches(match: MatchConfig, caller: Caller) -> bool:
    """Whether ``caller`` meets ``match``."""
    if match.kind == "keys":
        return caller.kind == "keys" and caller.name in match.values
    if caller.kind != "oauth":
        return False
    if match.kind == "subjects":
        return caller.name in match.values
    if match.kind == "scopes":
        return all(scope in caller.scopes for scope in match.values)
    return all(_holds(caller.claims.get(name), value) for name, value in match.claims.items())


def _holds(claim: JsonValue | None, value: str | int | bool) -> bool:
    # type() as well as ==: a claim of true must not match a value of 1, nor 1 a value of true.
    if isinstance(claim, list):
        return any(type(item) is type(value) and item == value for item in claim)
    return type(claim) is type(value) and claim == value
