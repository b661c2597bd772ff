"""Which ``[[profiles]]`` serves a caller (``cli/_profiles.py``), with callers built as the
authenticators build them: keys, OAuth tokens, and ``type = "none"``."""

from __future__ import annotations

from amends_toolkit._json import JsonValue
from amends_toolkit.adapters import Caller
from amends_toolkit.cli._config import MatchConfig, ProfileConfig
from amends_toolkit.cli._profiles import matches, profile_of


def key(name: str) -> Caller:
    return Caller(id=f"key:{name}", name=name, kind="keys")


def token(sub: str, *, scopes: tuple[str, ...] = (), **claims: JsonValue) -> Caller:
    return Caller(
        id=f"oauth:https://idp.example.com/ {sub}",
        name=sub,
        kind="oauth",
        client_id="app",
        scopes=frozenset(scopes),
        claims={"sub": sub, "iss": "https://idp.example.com/", **claims},
    )


def profile(name: str, match: MatchConfig) -> ProfileConfig:
    return ProfileConfig(name=name, match=match)


def test_a_keys_match_is_met_by_those_key_names_alone() -> None:
    match = MatchConfig(kind="keys", values=("alice", "ci"))
    assert matches(match, key("alice"))
    assert matches(match, key("ci"))
    assert not matches(match, key("bob"))
    # A token's subject of the same name is not the key.
    assert not matches(match, token("alice"))
    assert not matches(match, Caller(id="none:127.0.0.1", name="alice", kind="none"))


def test_a_subjects_match_is_met_by_a_tokens_sub_alone() -> None:
    match = MatchConfig(kind="subjects", values=("user-1",))
    assert matches(match, token("user-1"))
    assert not matches(match, token("user-2"))
    assert not matches(match, key("user-1"))


def test_a_scopes_match_needs_every_scope_it_names() -> None:
    match = MatchConfig(kind="scopes", values=("mcp:tools", "mcp:admin"))
    assert matches(match, token("u", scopes=("mcp:tools", "mcp:admin", "other")))
    assert not matches(match, token("u", scopes=("mcp:tools",)))
    assert not matches(match, key("u"))


def test_a_claims_match_is_met_by_the_value_or_a_list_that_holds_it() -> None:
    match = MatchConfig(kind="claims", claims={"groups": "eng", "tier": 2})
    assert matches(match, token("u", groups="eng", tier=2))
    assert matches(match, token("u", groups=["ops", "eng"], tier=2))
    assert not matches(match, token("u", groups=["ops"], tier=2))
    assert not matches(match, token("u", groups="eng"))  # every claim named must be met
    assert not matches(match, token("u", groups="engineering", tier=2))
    assert not matches(match, token("u", groups={"eng": True}, tier=2))
    # true is not 1, nor 1 true, though Python says they are equal.
    assert not matches(match, token("u", groups="eng", tier=True))
    assert not matches(MatchConfig(kind="claims", claims={"admin": True}), token("u", admin=1))
    assert matches(MatchConfig(kind="claims", claims={"admin": True}), token("u", admin=True))


def test_the_first_profile_that_matches_serves_and_none_may_match() -> None:
    profiles = [
        profile("eng", MatchConfig(kind="claims", claims={"groups": "eng"})),
        profile("admins", MatchConfig(kind="scopes", values=("mcp:admin",))),
        profile("everyone", MatchConfig(kind="subjects", values=("u", "v"))),
    ]
    assert profile_of(profiles, token("u", scopes=("mcp:admin",), groups=["eng"])) == "eng"
    assert profile_of(profiles, token("u", scopes=("mcp:admin",))) == "admins"
    assert profile_of(profiles, token("v")) == "everyone"
    assert profile_of(profiles, token("w")) is None
    assert profile_of(profiles, None) is None
    assert profile_of([], token("u")) is None
