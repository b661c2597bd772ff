"""The gateway's configuration: a TOML file, read with ``tomllib``, into frozen data.

The keys are binding (hosts rely on them)::

    [[sources]]                 # one table per source
    name = "tasks"
    mcp = "https://tasks.example.com/mcp"     # or stdio = ["cmd", "arg"], or openapi = "doc.json"
    headers = { Authorization = "Bearer ${TASKS_TOKEN}" }   # values only from the environment
    timeout = 30
    credentials = "shared"      # or "per-caller": each caller's own (see cli/_per_caller.py)

    [credentials]               # where per-caller credentials are kept (cli/_credentials.py)
    store = "tokens.db"         # SQLite beside this file, or "redis://host:6379/0" or "${VAR}"
    max_callers = 1000          # each per-caller source's callers with an actor at once
    public_url = "https://gw.example.com"     # where callers reach the gateway (for /connect)
    refresh_before = 60         # refresh a caller's OAuth token this many seconds before expiry
    connect_timeout = 600       # seconds a /connect flow waits for its authorization

    [policy]                    # globs over tools' names; the most restrictive match wins
    allow = ["tasks__list_*"]
    approve = ["tasks__delete_*"]
    block = []

    [serve]
    host = "127.0.0.1"
    port = 8765
    path = "/mcp"
    presentation = "tools"      # or "search", "code"
    code_approval = "split"     # code: a tool that needs approval beside execute, or "ask" in code
    allowed_hosts = ["gw.example.com"]        # Host values a proxy in front forwards
    allowed_origins = ["https://app.example.com"]
    metrics_key = "${METRICS_KEY}"            # /metrics only with Authorization: Bearer <it>
    approval_key = "${APPROVAL_KEY}"          # signs approvals' requestState (default: per process)
    limits_storage = "redis://127.0.0.1:6379" # profiles' calls per minute (default "memory://")

    [auth]                      # who may call: required (see cli/_auth.py)
    type = "keys"               # or "oauth", or "none" (only on a loopback host)
    keys = { alice = "${ALICE_KEY}" }         # keys: name -> key, from the environment only
    issuer = "https://idp.example.com/"       # oauth: the authorization server
    audience = "https://gw.example.com/mcp"   # oauth: default, the gateway's own URL
    scopes = ["mcp:tools"]                    # oauth: required on every token

    [[profiles]]                # the first that matches a caller serves it (see cli/_profiles.py)
    name = "eng"
    match = { keys = ["alice"] }              # or subjects, scopes, claims = { groups = "eng" }
    sources = ["tasks"]                       # default: every source
    presentation = "search"                   # default: [serve]'s
    policy = { allow = ["tasks__*"], approve = [], block = [] }   # as [policy]
    limits = { calls_per_minute = 600, max_in_flight = 16 }       # per caller (cli/_limits.py)
    approval = { by = "approvers", approvers = { keys = ["ops"] }, timeout = 300 }

    [approval]                  # [policy]'s callers' approval, and where approvals go
    by = "either"               # or "caller" (its client alone), "approvers" (out of band alone)
    approvers = { keys = ["ops"] }            # who may decide at /approvals: a match, as above
    timeout = 300               # seconds a call waits for a decision
    store = "approvals.db"      # SQLite, so a restart keeps pending approvals (default: memory)
    webhook = "https://hooks.example.com/approvals"   # told of each pending approval (or ${VAR})
    max_pending = 1000          # approvals pending at once; and of one caller:
    max_pending_per_caller = 10

A caller no profile matches is served by ``[policy]``, without limits; without a ``[policy]``
table, it is refused. A profile without ``approval`` asks as ``by = "either"`` with no approvers
(its client, when it can be asked; else only ``--approve-on-terminal``'s terminal); it does not
take ``[approval]``'s approvers. ``store``, ``webhook`` and the bounds are the whole gateway's,
in ``[approval]`` alone (one table: the issue's ``[approvals] store`` is ``[approval] store``).

A mistake is a :class:`ConfigError` naming the file, the line (where the key is written in the
file) and the fix; nothing is guessed and no key is ignored.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Final, Literal, get_args
from urllib.parse import urlsplit

import attrs

from amends_toolkit.adapters._approvals import (
    APPROVAL_TIMEOUT,
    MAX_PENDING,
    MAX_PENDING_PER_CALLER,
)
from amends_toolkit.adapters._mcp_server import MAX_SESSIONS, SESSION_IDLE_TIMEOUT

__all__ = (
    "APPROVAL_BY",
    "BODY_TIMEOUT",
    "DEFAULT_PROFILE",
    "HEADER_TIMEOUT",
    "MAX_CONNECTIONS",
    "PRESENTATIONS",
    "ApprovalConfig",
    "AuthConfig",
    "ConfigError",
    "CredentialsConfig",
    "ExchangeConfig",
    "GatewayConfig",
    "LimitsConfig",
    "MatchConfig",
    "PolicyConfig",
    "ProfileConfig",
    "ServeConfig",
    "SourceConfig",
    "TelemetryConfig",
    "caller_secret",
    "expand_header",
    "is_env_template",
    "is_loopback",
    "load_config",
)

HEADER_TIMEOUT: Final = 10.0
"""Seconds a request's head may take to arrive, from its first byte (or the connection's start)."""
BODY_TIMEOUT: Final = 30.0
"""Seconds a request's body may take to arrive after its head."""
MAX_CONNECTIONS: Final = 2_048
"""Client connections at once: a request at the cap is answered 503, a connection past it closed."""

Presentation = Literal["tools", "search", "code"]
PRESENTATIONS: Final[tuple[Presentation, ...]] = get_args(Presentation)
SourceKind = Literal["mcp", "stdio", "openapi"]
COMMAND_LINE_BASE_URL: Final = "http://127.0.0.1"
"""Where the requests of an OpenAPI document named on the command line go without --base-url."""
ApprovalBy = Literal["caller", "approvers", "either"]
APPROVAL_BY: Final[tuple[ApprovalBy, ...]] = get_args(ApprovalBy)

_ENV_VALUE: Final = re.compile(
    r"^(?P<scheme>(?:Bearer|Basic|Token) )?\$\{(?P<var>[A-Za-z_][A-Za-z0-9_]*)\}$"
)
"""A header value: ``${VAR}``, optionally after an auth scheme (a scheme word is no secret)."""
_CALLER_VALUE: Final = re.compile(
    r"^(?P<scheme>(?:Bearer|Basic|Token) )?\$\{caller:(?P<name>[A-Za-z0-9_-]{1,64})\}$"
)
"""A per-caller source's header value: ``${caller:NAME}``, the caller's secret NAME from the
credential store, optionally after an auth scheme."""
MAX_CALLERS: Final = 1_000
"""Callers of one per-caller source with an actor (and a client) at once; past it the least
recently served one's actor stops (its next call makes it again)."""
_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_SOURCE_KEYS: Final = frozenset(
    ("name", "mcp", "stdio", "openapi", "base_url", "env", "cwd", "headers", "timeout", "auth",
     "token_file", "redirect_uri", "propagate_trace", "credentials", "exchange")
)  # fmt: skip
_SERVE_KEYS: Final = frozenset(
    (
        "host",
        "port",
        "path",
        "presentation",
        "code_approval",
        "refresh_interval",
        "grace",
        "call_timeout",
        "max_in_flight_per_caller",
        "replica",
        "replicas",
        "max_sessions",
        "session_idle_timeout",
        "max_connections",
        "header_timeout",
        "body_timeout",
        "allowed_hosts",
        "allowed_origins",
        "metrics_key",
        "approval_key",
        "limits_storage",
    )
)
_CREDENTIALS_KEYS: Final = frozenset(
    ("store", "max_callers", "public_url", "refresh_before", "connect_timeout", "idle_timeout")
)
_AUTH_KEYS: Final = frozenset(("type", "issuer", "audience", "scopes", "keys"))
_TELEMETRY_KEYS: Final = frozenset(("otlp_endpoint", "service_name"))
_OAUTH_ONLY: Final = ("issuer", "audience", "scopes")
_ORIGIN: Final = re.compile(r"^https?://(\[[0-9A-Fa-f:.]+\]|[^/\s:\[\]]+)(:\d{1,5})?$")
_HOST: Final = re.compile(r"^[^/\s@]+$")
_POLICY_KEYS: Final = frozenset(("allow", "approve", "block"))
_PROFILE_KEYS: Final = frozenset(
    ("name", "match", "sources", "presentation", "policy", "limits", "approval")
)
_APPROVAL_KEYS: Final = ("by", "approvers", "timeout")
_GATEWAY_APPROVAL_KEYS: Final = ("store", "webhook", "max_pending", "max_pending_per_caller")
_MATCH_KINDS: Final = ("keys", "subjects", "scopes", "claims")
_LIMITS_KEYS: Final = ("calls_per_minute", "max_in_flight")
DEFAULT_PROFILE: Final = "default"
"""The profile name of ``[policy]``, which serves the callers no ``[[profiles]]`` matches (in
the audit lines and the metrics); a ``[[profiles]]`` table may not take it."""


class ConfigError(ValueError):
    """The configuration is wrong: the message names the file, the line and the fix."""


@attrs.frozen(kw_only=True)
class SourceConfig:
    """One ``[[sources]]`` table."""

    name: str
    kind: SourceKind
    target: str
    """The MCP URL, the OpenAPI document's path, or the stdio command."""
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    base_url: str | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    """Header name to its template (``${VAR}``), expanded from the environment at start."""
    timeout: float | None = None
    auth: Literal["oauth"] | None = None
    token_file: Path | None = None
    redirect_uri: str = "http://127.0.0.1:8976/callback"
    propagate_trace: bool = False
    """openapi: send a traced call's ``traceparent`` header to the API."""

    credentials: Literal["shared", "per-caller"] = "shared"
    """``shared``: one credential serves every caller (``headers``, ``auth``'s token file);
    ``per-caller``: each caller's own, from the credential store, in an actor of its own."""
    exchange: ExchangeConfig | None = None
    """A per-caller source's token exchange (RFC 8693): each caller's inbound token exchanged
    for one meant for this upstream."""


@attrs.frozen(kw_only=True)
class TelemetryConfig:
    """The ``[telemetry]`` table: where the gateway's spans go (see docs/guides/tracing.md)."""

    otlp_endpoint: str | None = None
    """A collector's OTLP/HTTP base URL (``http://127.0.0.1:4318``); spans go to its
    ``/v1/traces``. ``None``: the ``OTEL_EXPORTER_OTLP_*`` variables decide."""
    service_name: str = "amends-toolkit"
    """The ``service.name`` of the spans (``OTEL_SERVICE_NAME`` wins)."""


@attrs.frozen(kw_only=True)
class ExchangeConfig:
    """A source's ``exchange`` table (RFC 8693 token exchange, see ``cli/_exchange.py``)."""

    token_url: str
    """The authorization server's token endpoint (the issuer of the callers' tokens)."""
    audience: str
    """What the exchanged token is meant for: the upstream (its ``aud``)."""
    client_id: str
    """The gateway's client at the authorization server."""
    client_secret: str
    """Its secret's template (``${VAR}``), expanded from the environment at start."""


@attrs.frozen(kw_only=True)
class PolicyConfig:
    """The ``[policy]`` table: glob patterns over tools' names (see ``cli/_policy.py``)."""

    allow: tuple[str, ...] = ()
    approve: tuple[str, ...] = ()
    block: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class MatchConfig:
    """A profile's ``match``: one kind of test of a caller (see ``cli/_profiles.py``)."""

    kind: Literal["keys", "subjects", "scopes", "claims"]
    values: tuple[str, ...] = ()
    """keys: key names; subjects: tokens' ``sub``; scopes: scopes a token must all hold."""
    claims: Mapping[str, str | int | bool] = attrs.field(factory=dict)
    """claims: a claim's name to the value it must have or, for a list claim, hold."""


@attrs.frozen(kw_only=True)
class LimitsConfig:
    """A profile's ``limits``, each per caller (see ``cli/_limits.py``); none: no such limit."""

    calls_per_minute: int | None = None
    """Calls one caller may begin in any 60 seconds; past it a call is refused (retryable)."""
    max_in_flight: int | None = None
    """Calls one caller may have running at once, across sources; past it a call is refused."""


@attrs.frozen(kw_only=True)
class ApprovalConfig:
    """A profile's ``approval`` (``[approval]`` for ``[policy]``'s callers): who is asked to
    approve its callers' calls that need approval."""

    by: ApprovalBy = "either"
    """``caller``: the calling client alone (``ApprovalRequired`` when it cannot be asked);
    ``approvers``: out of band alone (``/approvals``, the terminal); ``either``: the client
    when it can be asked, else out of band."""
    approvers: MatchConfig | None = None
    """Who may decide its callers' approvals at ``/approvals``; none: only the terminal."""
    timeout: float = APPROVAL_TIMEOUT
    """Seconds a call waits for an out-of-band decision; then ``ApprovalTimedOut``."""


@attrs.frozen(kw_only=True)
class ProfileConfig:
    """One ``[[profiles]]`` table: who it serves, and what."""

    name: str
    match: MatchConfig
    sources: tuple[str, ...] | None = None
    """The sources its toolkit is assembled from; none: every source."""
    presentation: Presentation | None = None
    """None: ``[serve]``'s."""
    policy: PolicyConfig = attrs.field(factory=lambda: PolicyConfig())
    limits: LimitsConfig = attrs.field(factory=lambda: LimitsConfig())
    approval: ApprovalConfig = attrs.field(factory=lambda: ApprovalConfig())


@attrs.frozen(kw_only=True)
class ServeConfig:
    """The ``[serve]`` table."""

    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    presentation: Presentation = "tools"
    code_approval: Literal["split", "ask"] = "split"
    """Where code mode puts a tool that needs approval: beside ``execute`` (``"split"``), or
    declared to the code (``"ask"``), each call of it from code asking as a direct call does
    (the client that called, first)."""
    refresh_interval: float | None = None
    """Seconds between catalog refreshes; none when not given (SIGHUP and list_changed still)."""
    grace: float = 10.0
    """Seconds running calls may take to finish once the gateway is told to stop."""
    call_timeout: float | None = None
    """Seconds a call may run in a source's actor; none when not given."""
    max_in_flight_per_caller: int = 32
    """Calls of one caller a source runs or queues at once, half its 64 slots: the caller's next
    call waits for one of them to end while other callers' calls take the free slots (64 turns
    it off). A caller is a session (its ``Mcp-Session-Id``) or a stateless client's address, so
    every stateless client behind one proxy shares one caller's share."""
    replica: int | None = None
    """This gateway's place (from 1) among the servers of a balancer that hashes session ids."""
    replicas: int | None = None
    """How many servers that balancer has (see ``deploy/``)."""
    max_sessions: int = MAX_SESSIONS
    """Sessions open at once; past it an idle one ends (see ``MAX_SESSIONS``)."""
    session_idle_timeout: float = SESSION_IDLE_TIMEOUT
    """Seconds a session may be idle before it ends."""
    max_connections: int = MAX_CONNECTIONS
    """Client connections at once (see ``MAX_CONNECTIONS``)."""
    header_timeout: float = HEADER_TIMEOUT
    """Seconds a request's head may take; then its connection is closed."""
    body_timeout: float = BODY_TIMEOUT
    """Seconds a request's body may take after its head; then its connection is closed."""
    allowed_hosts: tuple[str, ...] = ()
    """``Host`` values let in besides ``host`` and loopback's (what a proxy in front forwards)."""
    allowed_origins: tuple[str, ...] = ()
    """``Origin`` values let in besides ``host``'s and loopback's (``https://app.example.com``)."""
    metrics_key: str | None = None
    """The template (``${VAR}``) of the key ``/metrics`` asks for; none: ``/metrics`` is open."""
    approval_key: str | None = None
    """The template (``${VAR}``) of the key that signs a 2026-07-28 approval question's
    ``requestState``; none: a key of the process's own (a state is answered by it alone)."""
    limits_storage: str = "memory://"
    """Where profiles' ``calls_per_minute`` are counted: ``memory://`` (this process), or a
    Redis URL (``redis://``, ``rediss://``, ``redis+unix://``) that replicas share, written
    without a password or taken whole from the environment (``${VAR}``)."""


@attrs.frozen(kw_only=True)
class AuthConfig:
    """The ``[auth]`` table: who may call the gateway."""

    type: Literal["oauth", "keys", "none"]
    issuer: str | None = None
    """oauth: the authorization server's issuer identifier (https, or http on a loopback
    address); its metadata gives the JWKS."""
    audience: str | None = None
    """oauth: this gateway as a resource (RFC 8707); ``None``: the gateway's own URL."""
    scopes: tuple[str, ...] = ()
    """oauth: scopes required on every token."""
    keys: Mapping[str, str] = attrs.field(factory=dict)
    """keys: a key's name to its template (``${VAR}``), expanded from the environment at start."""


@attrs.frozen(kw_only=True)
class CredentialsConfig:
    """The ``[credentials]`` table: where per-caller credentials are kept."""

    store: str
    """A SQLite file's path (relative to the configuration's directory), or a Redis URL without
    a password, or ``${VAR}`` naming either (see ``cli/_credentials.py``)."""
    max_callers: int = MAX_CALLERS
    """Callers of one per-caller source with an actor at once (see ``MAX_CALLERS``)."""
    public_url: str | None = None
    """The gateway's address as callers' browsers reach it (``https://gw.example.com``), in
    ``/connect`` addresses and OAuth callbacks; none: its own (``http://HOST:PORT``)."""
    refresh_before: float = 60.0
    """Seconds before a caller's OAuth access token expires when it is refreshed."""
    connect_timeout: float = 600.0
    """Seconds a ``/connect`` flow waits for the caller to authorize."""
    idle_timeout: float = 300.0
    """Seconds a caller's actor of a per-caller source stays with nothing to do before it is
    passivated (``Runtime.spawn``'s ``idle_timeout``: its session ends; its next call starts it
    again), so idle callers cost almost nothing."""


@attrs.frozen(kw_only=True)
class GatewayConfig:
    """A whole configuration file."""

    path: Path
    sources: tuple[SourceConfig, ...]
    policy: PolicyConfig | None
    """None when the file has no ``[policy]``: a caller no profile matches is refused."""
    serve: ServeConfig
    auth: AuthConfig | None = None
    """None when the file has no ``[auth]``: the gateway does not start."""
    profiles: tuple[ProfileConfig, ...] = ()
    telemetry: TelemetryConfig = TelemetryConfig()
    approval: ApprovalConfig = attrs.field(factory=lambda: ApprovalConfig())
    """``[approval]``: how ``[policy]``'s callers' calls are approved."""
    approval_store: Path | None = None
    """``[approval] store``: the SQLite file of pending approvals; none: memory."""
    approval_webhook: str | None = None
    """``[approval] webhook``: the URL (or its ``${VAR}``) told of each pending approval."""
    approval_max_pending: int = MAX_PENDING
    """``[approval] max_pending``: approvals pending at once, in all."""
    approval_max_pending_per_caller: int = MAX_PENDING_PER_CALLER
    """``[approval] max_pending_per_caller``: approvals pending at once of one caller."""
    credentials: CredentialsConfig | None = None
    """None when the file has no ``[credentials]``: no source may be per caller."""


def load_config(path: Path) -> GatewayConfig:
    """Read and check a configuration file.

    Raises:
        ConfigError: the file cannot be read, is no TOML, or a key is wrong (with its line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the configuration ({error.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not TOML: {error}") from None
    return _Reader(path, text).read(data)


def is_env_template(value: object) -> bool:
    """Whether a header's value is taken from the environment (``${VAR}``, ``Bearer ${VAR}``)."""
    return isinstance(value, str) and _ENV_VALUE.match(value) is not None


def expand_header(template: str, environ: dict[str, str] | None = None) -> str:
    """A header's value from its template (``${VAR}``) and the environment.

    Raises:
        KeyError: the variable is not set (its name is the error's argument).
    """
    match = _ENV_VALUE.match(template)
    assert match is not None  # checked when the configuration was read
    values = os.environ if environ is None else environ
    var = match["var"]
    if not values.get(var):
        raise KeyError(var)
    return f"{match['scheme'] or ''}{values[var]}"


def caller_secret(template: str) -> tuple[str, str] | None:
    """A per-caller header's scheme word (``"Bearer "`` or ``""``) and the name of the caller's
    secret it takes (``${caller:NAME}``); ``None`` for any other value."""
    match = _CALLER_VALUE.match(template)
    return None if match is None else (match["scheme"] or "", match["name"])


def is_loopback(host: str) -> bool:
    """Whether a host (a name or an address, an IPv6 one bracketed or not) is this machine's
    loopback: ``localhost``, ``127.0.0.0/8`` or ``::1``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_key_template(value: object) -> bool:
    """A key's template: ``${VAR}`` alone (a key takes no scheme word)."""
    match = _ENV_VALUE.match(value) if isinstance(value, str) else None
    return match is not None and match["scheme"] is None


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        # Where each table begins: ("sources", 3) for the first [[sources]] at line 3, ...
        self.tables: list[tuple[str, int]] = []
        for number, line in enumerate(self.lines, start=1):
            header = re.match(r"^\s*\[\[?\s*([A-Za-z_.]+)\s*\]\]?", line)
            if header:
                self.tables.append((header[1], number))

    def fail(
        self, problem: str, *, table: str, index: int = 0, key: str | None = None
    ) -> ConfigError:
        line = self._line(table, index, key)
        where = f"{self.path}:{line}" if line else str(self.path)
        return ConfigError(f"{where}: {problem}")

    def _line(self, table: str, index: int, key: str | None) -> int | None:
        starts = [n for name, n in self.tables if name == table]
        if index >= len(starts):
            return None
        start = starts[index]
        ends = [n for _, n in self.tables if n > start]
        end = ends[0] if ends else len(self.lines) + 1
        if key is None:
            return start
        pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
        for number in range(start + 1, end):
            if pattern.match(self.lines[number - 1]):
                return number
        return start

    def read(self, data: dict[str, object]) -> GatewayConfig:
        unknown = sorted(
            set(data)
            - {
                "sources",
                "policy",
                "serve",
                "auth",
                "profiles",
                "telemetry",
                "approval",
                "credentials",
            }
        )
        if unknown:
            raise ConfigError(
                f"{self.path}: unknown table or key {unknown[0]!r}; the keys are [[sources]], "
                "[policy], [serve], [auth], [[profiles]], [telemetry], [approval] and "
                "[credentials]"
                + (" (one table: [approval] store)" if unknown[0] == "approvals" else "")
            )
        raw_sources = data.get("sources")
        if not isinstance(raw_sources, list) or not raw_sources:
            raise ConfigError(f"{self.path}: no [[sources]]: name at least one source")
        sources = tuple(self._source(i, raw) for i, raw in enumerate(raw_sources))
        seen: set[str] = set()
        for i, source in enumerate(sources):
            if source.name in seen:
                raise self.fail(
                    f"two sources are named {source.name!r}: give each its own name",
                    table="sources", index=i, key="name",
                )  # fmt: skip
            seen.add(source.name)
        serve = self._serve(data.get("serve", {}))
        auth = self._auth(data["auth"]) if "auth" in data else None
        if auth is not None and auth.type == "none" and not is_loopback(serve.host):
            raise self.fail(
                f'type = "none" lets anyone who reaches {serve.host} call every tool: it is for '
                'a loopback [serve] host only (host = "127.0.0.1"); give callers keys '
                '(type = "keys") or tokens (type = "oauth")',
                table="auth", key="type",
            )  # fmt: skip
        credentials = self._credentials(data["credentials"]) if "credentials" in data else None
        for i, source in enumerate(sources):
            if source.credentials != "per-caller":
                continue
            if credentials is None:
                raise self.fail(
                    f'source {source.name!r} has credentials = "per-caller": add a '
                    '[credentials] table naming where they are kept (store = "tokens.db")',
                    table="sources", index=i, key="credentials",
                )  # fmt: skip
            if auth is None or auth.type == "none":
                raise self.fail(
                    f'source {source.name!r} has credentials = "per-caller", which needs callers '
                    'the gateway knows: [auth] type = "keys" or "oauth"',
                    table="sources", index=i, key="credentials",
                )  # fmt: skip
            if source.exchange is not None and auth.type != "oauth":
                raise self.fail(
                    f"source {source.name!r} exchanges its callers' tokens, which needs callers "
                    'with tokens: [auth] type = "oauth"',
                    table="sources", index=i, key="exchange",
                )  # fmt: skip
        raw_profiles = data.get("profiles", [])
        if not isinstance(raw_profiles, list):
            raise self.fail("profiles must be tables, each written [[profiles]]", table="profiles")
        profiles = tuple(self._profile(i, raw, seen, auth) for i, raw in enumerate(raw_profiles))
        names = [profile.name for profile in profiles]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise self.fail(
                    f"two profiles are named {name!r}: give each its own name",
                    table="profiles", index=i, key="name",
                )  # fmt: skip
        approval: dict[str, Any] = {}
        if "approval" in data:
            raw, fail = self._table(
                data["approval"], "approval", frozenset(_APPROVAL_KEYS + _GATEWAY_APPROVAL_KEYS)
            )
            approval = self._gateway_approval(raw, auth, fail)
        return GatewayConfig(
            path=self.path,
            sources=sources,
            policy=self._policy(data["policy"]) if "policy" in data else None,
            serve=serve,
            auth=auth,
            profiles=profiles,
            telemetry=self._telemetry(data.get("telemetry", {})),
            **approval,
            credentials=credentials,
        )

    def _gateway_approval(
        self,
        raw: dict[str, Any],
        auth: AuthConfig | None,
        fail: Callable[[str, str], ConfigError],
    ) -> dict[str, Any]:
        """``[approval]``: the default profile's approval, and the gateway's store and webhook."""
        options: dict[str, Any] = {
            "approval": self._approval(
                {k: v for k, v in raw.items() if k in _APPROVAL_KEYS}, auth, fail, table=True
            )
        }
        if "store" in raw:
            store = raw["store"]
            if not isinstance(store, str) or not store or store.startswith(("${", "memory")):
                raise fail(
                    'store must be the path of a SQLite file, such as store = "approvals.db" '
                    "(leave it out to keep approvals in memory)",
                    "store",
                )
            path = Path(store)
            options["approval_store"] = path if path.is_absolute() else self.path.parent / path
        if "webhook" in raw:
            webhook = raw["webhook"]
            if not (
                _is_key_template(webhook)
                or (
                    isinstance(webhook, str)
                    and _is_served_url(webhook)
                    and urlsplit(webhook).password is None
                )
            ):
                raise fail(
                    "webhook must be an https:// URL (http:// on a loopback address only), or "
                    'taken whole from the environment, as "${APPROVAL_WEBHOOK}" (for a URL '
                    "that holds a secret)",
                    "webhook",
                )
            options["approval_webhook"] = webhook
        for key in ("max_pending", "max_pending_per_caller"):
            if key in raw:
                if not _counted(raw[key]):
                    raise fail(f"{key} must be a whole number above 0", key)
                options[f"approval_{key}"] = raw[key]
        return options

    def _approval(
        self,
        raw: object,
        auth: AuthConfig | None,
        fail: Callable[[str, str], ConfigError],
        *,
        table: bool = False,
    ) -> ApprovalConfig:
        """A profile's ``approval``, or (``table``) the keys of ``[approval]`` that are its."""
        key = "by" if table else "approval"
        example = 'approval = { by = "approvers", approvers = { keys = ["ops"] }, timeout = 300 }'
        if not isinstance(raw, dict):
            raise fail(f"approval must be a table, such as {example}", key)
        if unknown := _unknown_key(raw, _APPROVAL_KEYS, "approval"):
            name, words = unknown
            if name in _GATEWAY_APPROVAL_KEYS:
                words += f"; {name} is the whole gateway's: write it in [approval]"
            raise fail(words, name if table else key)
        options: dict[str, Any] = {}
        if "by" in raw:
            if raw["by"] not in APPROVAL_BY:
                raise fail('by must be "caller", "approvers" or "either"', "by" if table else key)
            options["by"] = raw["by"]
        if "approvers" in raw:
            options["approvers"] = self._match(
                raw["approvers"], auth, fail, what="approvers", key="approvers" if table else key
            )
        if "timeout" in raw:
            if not _positive(raw["timeout"]):
                raise fail(
                    "timeout must be a positive number of seconds", "timeout" if table else key
                )
            options["timeout"] = float(raw["timeout"])
        if options.get("by") == "caller" and "approvers" in options:
            raise fail(
                'by = "caller" asks the calling client alone: approvers are for "approvers" '
                'or "either"',
                "approvers" if table else key,
            )
        return ApprovalConfig(**options)

    def _profile(
        self, index: int, raw: object, sources: set[str], auth: AuthConfig | None
    ) -> ProfileConfig:
        def fail(problem: str, key: str | None = None) -> ConfigError:
            return self.fail(problem, table="profiles", index=index, key=key)

        if not isinstance(raw, dict):
            raise fail("each [[profiles]] must be a table")
        if refused := _unknown_key(raw, _PROFILE_KEYS, "[[profiles]]"):
            raise fail(refused[1], refused[0])
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise fail("a profile needs a name of 1 to 32 letters, digits, '_' or '-'", "name")
        if name == DEFAULT_PROFILE:
            raise fail(
                f"the profile name {DEFAULT_PROFILE!r} is [policy]'s: choose another", "name"
            )
        match = self._match(raw.get("match"), auth, fail)
        options: dict[str, Any] = {}
        if "sources" in raw:
            listed = raw["sources"]
            if (
                not isinstance(listed, list)
                or not listed
                or not all(isinstance(s, str) for s in listed)
            ):
                raise fail('sources must be a list of source names, such as ["tasks"]', "sources")
            unknown = [s for s in listed if s not in sources]
            if unknown:
                raise fail(
                    f"no source is named {unknown[0]!r}; the sources are "
                    + ", ".join(sorted(sources)),
                    "sources",
                )
            options["sources"] = tuple(dict.fromkeys(listed))
        if "presentation" in raw:
            if raw["presentation"] not in ("tools", "search", "code"):
                raise fail('presentation must be "tools", "search" or "code"', "presentation")
            options["presentation"] = raw["presentation"]
        if "policy" in raw:
            options["policy"] = self._policy(raw["policy"], index=index)
        if "limits" in raw:
            options["limits"] = self._limits(raw["limits"], fail)
        if "approval" in raw:
            options["approval"] = self._approval(raw["approval"], auth, fail)
        return ProfileConfig(name=name, match=match, **options)

    @staticmethod
    def _limits(raw: object, fail: Callable[[str, str], ConfigError]) -> LimitsConfig:
        example = "limits = { calls_per_minute = 600, max_in_flight = 16 }"
        if not isinstance(raw, dict) or not raw:
            raise fail(f"limits must be a table, such as {example}", "limits")
        if unknown := _unknown_key(raw, _LIMITS_KEYS, "limits"):
            raise fail(unknown[1], "limits")
        for key, value in raw.items():
            if not _counted(value):
                raise fail(f"{key} must be a whole number above 0, as in {example}", "limits")
        return LimitsConfig(**raw)

    def _match(
        self,
        raw: object,
        auth: AuthConfig | None,
        fail: Callable[[str, str], ConfigError],
        *,
        what: str = "match",
        key: str = "match",
    ) -> MatchConfig:
        """A ``match`` (or, as ``what``, a match of the same form: ``approvers``)."""
        if not isinstance(raw, dict) or len(raw) != 1 or next(iter(raw)) not in _MATCH_KINDS:
            raise fail(
                f'{what} must name one kind of caller: {{ keys = ["alice"] }}, '
                '{ subjects = [...] }, { scopes = [...] } or { claims = { groups = "eng" } }',
                key,
            )
        ((kind, value),) = raw.items()
        wanted = "keys" if kind == "keys" else "oauth"
        if auth is not None and auth.type != wanted:
            raise fail(f'{what} = {{ {kind} = ... }} goes with [auth] type = "{wanted}"', key)
        if kind == "claims":
            if (
                not isinstance(value, dict)
                or not value
                or not all(isinstance(v, str | int | bool) for v in value.values())
            ):
                raise fail(
                    'claims must name claims and their values, such as { groups = "eng" }',
                    key,
                )
            return MatchConfig(kind="claims", claims=dict(value))
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise fail(f'{kind} must be a list of names, such as {kind} = ["alice"]', key)
        if kind == "keys" and auth is not None:
            unknown = [v for v in value if v not in auth.keys]
            if unknown:
                raise fail(
                    f"no key of [auth] is named {unknown[0]!r}; the keys are "
                    + ", ".join(sorted(auth.keys)),
                    key,
                )
        return MatchConfig(kind=kind, values=tuple(value))

    def _source(self, index: int, raw: object) -> SourceConfig:
        def fail(problem: str, key: str | None = None) -> ConfigError:
            return self.fail(problem, table="sources", index=index, key=key)

        if not isinstance(raw, dict):
            raise fail("a source must be a table ([[sources]])")
        if unknown := _unknown_key(raw, _SOURCE_KEYS, "a source"):
            raise fail(unknown[1], unknown[0])
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise fail(
                "name must be 1 to 32 letters, digits, '_' or '-', such as name = \"tasks\"", "name"
            )
        kinds = [kind for kind in ("mcp", "stdio", "openapi") if kind in raw]
        if len(kinds) != 1:
            raise fail(
                f'source {name!r} needs exactly one of mcp = "URL", stdio = ["command", ...] '
                'or openapi = "PATH"',
                kinds[1] if len(kinds) > 1 else "name",
            )
        kind: SourceKind = kinds[0]  # type: ignore[assignment]
        value = raw[kind]
        args: tuple[str, ...] = ()
        if kind == "stdio":
            if not (
                isinstance(value, list) and value and all(isinstance(v, str) and v for v in value)
            ):
                raise fail("stdio must be a list of strings, the command then its arguments", kind)
            target, args = value[0], tuple(value[1:])
        elif not isinstance(value, str) or not value:
            raise fail(f"{kind} must be a string", kind)
        else:
            target = value
        if kind == "mcp" and not re.match(r"^https?://[^/\s]+", target):
            raise fail("mcp must be an absolute http:// or https:// URL of the MCP endpoint", kind)
        if kind == "openapi":
            document = Path(target)
            if not document.is_absolute():
                target = str(self.path.parent / document)
        base_url = raw.get("base_url")
        if kind == "openapi":
            if not isinstance(base_url, str) or not re.match(r"^https?://[^/\s]+", base_url):
                raise fail(
                    'an openapi source needs base_url = "https://..." (where requests go)',
                    "base_url",
                )
        elif base_url is not None:
            raise fail("base_url is for openapi sources only", "base_url")
        for key in ("env", "cwd"):
            if key in raw and kind != "stdio":
                raise fail(f"{key} is for stdio sources only", key)
        env = raw.get("env")
        if env is not None and not (
            isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
        ):
            raise fail(
                'env must be a table of strings, such as env = { LOG_LEVEL = "info" }', "env"
            )
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise fail("cwd must be a path", "cwd")
        headers = raw.get("headers", {})
        if kind == "stdio" and "headers" in raw:
            raise fail(
                "headers are for mcp and openapi sources (give a stdio server env)", "headers"
            )
        if not isinstance(headers, dict):
            raise fail(
                'headers must be a table, such as headers = { Authorization = "Bearer ${TOKEN}" }',
                "headers",
            )
        credentials = raw.get("credentials", "shared")
        if credentials not in ("shared", "per-caller"):
            raise fail('credentials must be "shared" or "per-caller"', "credentials")
        if credentials == "per-caller" and kind == "stdio":
            raise fail(
                'credentials = "per-caller" is for mcp and openapi sources (a stdio server has '
                "no caller's credentials to send)",
                "credentials",
            )
        per_caller = credentials == "per-caller"
        for header, template in headers.items():
            if caller_secret(template) is not None and not per_caller:
                raise fail(
                    f'header {header!r} takes a caller\'s secret ("${{caller:NAME}}"), which '
                    'needs credentials = "per-caller" on its source',
                    "headers",
                )
            if not (is_env_template(template) or caller_secret(template) is not None):
                raise fail(
                    f'header {header!r} must take its value from the environment, as "${{VAR}}" '
                    '(or "Bearer ${VAR}"), or from the caller\'s secrets, as '
                    '"${caller:NAME}": a secret written in the file is refused',
                    "headers",
                )
        timeout = raw.get("timeout")
        if timeout is not None and not _positive(timeout):
            raise fail("timeout must be a positive number of seconds", "timeout")
        auth = raw.get("auth")
        if auth is not None and (auth != "oauth" or kind != "mcp"):
            raise fail('auth may only be "oauth", on an mcp source', "auth")
        token_file = raw.get("token_file")
        if per_caller and "redirect_uri" in raw:
            raise fail(
                "a per-caller source's OAuth redirect is the gateway's own "
                "(/connect/SOURCE/callback, at [credentials] public_url): remove redirect_uri",
                "redirect_uri",
            )
        if per_caller and "token_file" in raw:
            raise fail(
                "a per-caller source keeps each caller's tokens in [credentials] store, "
                "not in a token_file: remove it",
                "token_file",
            )
        exchange = self._exchange(raw["exchange"], fail) if "exchange" in raw else None
        if exchange is not None and not per_caller:
            raise fail('exchange needs credentials = "per-caller"', "exchange")
        if exchange is not None and auth is not None:
            raise fail(
                'exchange and auth = "oauth" are two ways to a caller\'s token: keep one',
                "exchange",
            )
        if exchange is not None and any(h.lower() == "authorization" for h in headers):
            raise fail(
                "exchange sends the exchanged token as Authorization: remove that header",
                "headers",
            )
        if (
            per_caller
            and auth is None
            and exchange is None
            and not any(caller_secret(template) is not None for template in headers.values())
        ):
            raise fail(
                'credentials = "per-caller" needs what is each caller\'s: auth = "oauth" (each '
                "caller connects its account), exchange = { token_url, audience, ... } (the "
                'caller\'s own token exchanged), or a header "${caller:NAME}" (a secret an '
                "admin sets with amends-toolkit credentials set)",
                "credentials",
            )
        if auth == "oauth" and not per_caller and not isinstance(token_file, str):
            raise fail(
                'auth = "oauth" needs token_file = "PATH" (where the tokens are kept)', "auth"
            )
        if auth is None and "token_file" in raw:
            raise fail('token_file goes with auth = "oauth"', "token_file")
        redirect_uri = raw.get("redirect_uri", SourceConfig.__attrs_attrs__.redirect_uri.default)
        if not isinstance(redirect_uri, str) or not re.match(
            r"^http://(127\.0\.0\.1|localhost):\d+/", redirect_uri
        ):
            raise fail(
                "redirect_uri must be http://127.0.0.1:PORT/PATH (the gateway listens there)",
                "redirect_uri",
            )
        propagate_trace = raw.get("propagate_trace", False)
        if not isinstance(propagate_trace, bool):
            raise fail("propagate_trace must be true or false", "propagate_trace")
        if propagate_trace and kind != "openapi":
            raise fail(
                "propagate_trace is for openapi sources (an MCP server is always sent the trace "
                "context in the request's _meta)",
                "propagate_trace",
            )
        return SourceConfig(
            name=name,
            kind=kind,
            target=target,
            args=args,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            base_url=base_url,
            headers=dict(headers),
            timeout=float(timeout) if timeout is not None else None,
            auth=auth,
            token_file=(self.path.parent / token_file) if isinstance(token_file, str) else None,
            redirect_uri=redirect_uri,
            propagate_trace=propagate_trace,
            credentials=credentials,
            exchange=exchange,
        )

    @staticmethod
    def _exchange(raw: object, fail: Callable[[str, str], ConfigError]) -> ExchangeConfig:
        example = (
            'exchange = { token_url = "https://idp.example.com/token", audience = '
            '"https://api.example.com", client_id = "gateway", client_secret = "${SECRET}" }'
        )
        keys = ("token_url", "audience", "client_id", "client_secret")
        if not isinstance(raw, dict) or set(raw) != set(keys):
            raise fail(f"exchange must be a table of {', '.join(keys)}, as {example}", "exchange")
        if not all(isinstance(raw[key], str) and raw[key] for key in keys):
            raise fail(f"each of exchange's keys is a string, as {example}", "exchange")
        if not _is_served_url(raw["token_url"]):
            raise fail(
                "exchange's token_url must be https (http only on a loopback address)", "exchange"
            )
        if not _is_key_template(raw["client_secret"]):
            raise fail(
                'exchange\'s client_secret must come from the environment, as "${VAR}": a '
                "secret written in the file is refused",
                "exchange",
            )
        return ExchangeConfig(**raw)

    def _credentials(self, raw: object) -> CredentialsConfig:
        raw, fail = self._table(raw, "credentials", _CREDENTIALS_KEYS)
        store = raw.get("store")
        if not isinstance(store, str) or not store:
            raise fail(
                'store must say where credentials are kept: a file (store = "tokens.db"), a '
                'Redis URL without a password, or one from the environment ("${REDIS_URL}")',
                "store",
            )
        if store.startswith("redis") and not _is_storage(store):
            raise fail(
                "a Redis store's URL has no password in the file: take it from the environment, "
                'as store = "${REDIS_URL}"',
                "store",
            )
        if "://" not in store and not _is_key_template(store):
            store = str(self.path.parent / store)
        options: dict[str, Any] = {"store": store}
        public_url = raw.get("public_url")
        if public_url is not None:
            if (
                not isinstance(public_url, str)
                or not _is_served_url(public_url)
                or (urlsplit(public_url).path not in ("", "/"))
            ):
                raise fail(
                    'public_url must be the gateway\'s address, such as "https://gw.example.com" '
                    "(http only on a loopback address; no path)",
                    "public_url",
                )
            options["public_url"] = public_url.rstrip("/")
        for key in ("refresh_before", "connect_timeout", "idle_timeout"):
            if key in raw:
                if not _positive(raw[key]):
                    raise fail(f"{key} must be a positive number of seconds", key)
                options[key] = float(raw[key])
        if "max_callers" in raw:
            if not _counted(raw["max_callers"]):
                raise fail("max_callers must be a whole number above 0", "max_callers")
            options["max_callers"] = raw["max_callers"]
        return CredentialsConfig(**options)

    def _table(
        self, raw: object, table: str, known: frozenset[str]
    ) -> tuple[dict[str, Any], Callable[[str, str], ConfigError]]:
        """``[table]`` as read, all its keys ``known``, and how to refuse one of its keys."""
        if not isinstance(raw, dict):
            raise self.fail(f"[{table}] must be a table", table=table)

        def fail(problem: str, key: str) -> ConfigError:
            return self.fail(problem, table=table, key=key)

        if unknown := _unknown_key(raw, known, f"[{table}]"):
            raise fail(unknown[1], unknown[0])
        return raw, fail

    def _policy(self, raw: object, *, index: int | None = None) -> PolicyConfig:
        """``[policy]``, or with ``index`` the ``policy`` of that ``[[profiles]]``."""
        where, table = (
            ("[policy]", "policy") if index is None else ("a profile's policy", "profiles")
        )

        def fail(problem: str, key: str) -> ConfigError:
            return self.fail(
                problem, table=table, index=index or 0, key=key if index is None else "policy"
            )

        if not isinstance(raw, dict):
            raise fail(f"{where} must be a table", "policy")
        lists: dict[str, tuple[str, ...]] = {}
        if unknown := _unknown_key(raw, _POLICY_KEYS, where):
            raise fail(unknown[1], unknown[0])
        for key, value in raw.items():
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise fail(
                    f'{key} must be a list of glob patterns, such as {key} = ["tasks__*"]', key
                )
            lists[key] = tuple(value)
        return PolicyConfig(**lists)

    def _serve(self, raw: object) -> ServeConfig:
        raw, fail = self._table(raw, "serve", _SERVE_KEYS)
        options: dict[str, object] = {}
        host = raw.get("host", "127.0.0.1")
        if not isinstance(host, str) or not host:
            raise fail('host must be an address, such as host = "127.0.0.1"', "host")
        options["host"] = host
        port = raw.get("port", 8765)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise fail("port must be a number from 0 to 65535 (0: any free port)", "port")
        options["port"] = port
        path = raw.get("path", "/mcp")
        if (
            not isinstance(path, str)
            or not path.startswith("/")
            or path in ("/healthz", "/metrics", "/approvals")
        ):
            raise fail(
                "path must begin with '/' and not be /healthz, /metrics or /approvals", "path"
            )
        options["path"] = path
        presentation = raw.get("presentation", "tools")
        if presentation not in PRESENTATIONS:
            raise fail('presentation must be "tools", "search" or "code"', "presentation")
        options["presentation"] = presentation
        code_approval = raw.get("code_approval", "split")
        if code_approval not in ("split", "ask"):
            raise fail('code_approval must be "split" or "ask"', "code_approval")
        options["code_approval"] = code_approval
        for key in (
            "refresh_interval",
            "grace",
            "call_timeout",
            "session_idle_timeout",
            "header_timeout",
            "body_timeout",
        ):
            if key in raw:
                if not _positive(raw[key]):
                    raise fail(f"{key} must be a positive number of seconds", key)
                options[key] = float(raw[key])
        for key in ("max_in_flight_per_caller", "max_sessions", "max_connections"):
            if key in raw:
                value = raw[key]
                if not _counted(value):
                    raise fail(f"{key} must be a whole number above 0", key)
                options[key] = value
        replica, replicas = raw.get("replica"), raw.get("replicas")
        if (replica is None) != (replicas is None):
            raise fail(
                "replica and replicas go together, such as replica = 1 and replicas = 2",
                "replica" if replica is not None else "replicas",
            )
        if replica is not None:
            if not (
                isinstance(replica, int)
                and isinstance(replicas, int)
                and not isinstance(replica, bool)
                and not isinstance(replicas, bool)
                and 1 <= replica <= replicas
            ):
                raise fail("replica must be a whole number from 1 to replicas", "replica")
            options["replica"], options["replicas"] = replica, replicas
        for key, pattern, what in (
            (
                "allowed_hosts",
                _HOST,
                'hosts, such as ["gw.example.com"] (or "gw.example.com:8443")',
            ),
            (
                "allowed_origins",
                _ORIGIN,
                'origins, such as ["https://app.example.com"] '
                "(a scheme, a host, a port if not the scheme's, no path)",
            ),
        ):
            listed = raw.get(key, [])
            if not isinstance(listed, list) or not all(
                isinstance(item, str) and pattern.match(item) for item in listed
            ):
                raise fail(f"{key} must be a list of {what}", key)
            options[key] = tuple(listed)
        for key in ("metrics_key", "approval_key"):
            if key in raw:
                if not _is_key_template(raw[key]):
                    raise fail(
                        f'{key} must take its value from the environment, as "${{VAR}}": '
                        "a key written in the file is refused",
                        key,
                    )
                options[key] = raw[key]
        if "limits_storage" in raw:
            storage = raw["limits_storage"]
            if not (_is_key_template(storage) or _is_storage(storage)):
                raise fail(
                    'limits_storage must be "memory://" or a Redis URL such as '
                    '"redis://127.0.0.1:6379/0", without a password (take a URL that has one '
                    'from the environment, as "${REDIS_URL}")',
                    "limits_storage",
                )
            options["limits_storage"] = storage
        return ServeConfig(**options)  # type: ignore[arg-type]

    def _telemetry(self, raw: object) -> TelemetryConfig:
        raw, fail = self._table(raw, "telemetry", _TELEMETRY_KEYS)
        endpoint = raw.get("otlp_endpoint")
        if endpoint is not None and not (
            isinstance(endpoint, str)
            and _is_url(endpoint)
            and not (parts := urlsplit(endpoint)).username
            and not parts.query
        ):
            raise fail(
                "otlp_endpoint must be a collector's http(s) URL without credentials, such as "
                '"http://127.0.0.1:4318" (give its headers in OTEL_EXPORTER_OTLP_HEADERS)',
                "otlp_endpoint",
            )
        service = raw.get("service_name", TelemetryConfig.__attrs_attrs__.service_name.default)
        if not isinstance(service, str) or not service:
            raise fail('service_name must be a name, such as "amends-toolkit"', "service_name")
        return TelemetryConfig(otlp_endpoint=endpoint, service_name=service)

    def _auth(self, raw: object) -> AuthConfig:
        raw, fail = self._table(raw, "auth", _AUTH_KEYS)
        kind = raw.get("type")
        if kind not in ("oauth", "keys", "none"):
            raise fail('type must be "oauth", "keys" or "none"', "type")
        if kind != "oauth":
            for key in _OAUTH_ONLY:
                if key in raw:
                    raise fail(f'{key} goes with type = "oauth"', key)
        if kind != "keys" and "keys" in raw:
            raise fail('keys goes with type = "keys"', "keys")
        if kind == "none":
            return AuthConfig(type="none")
        if kind == "keys":
            keys = raw.get("keys")
            if not isinstance(keys, dict) or not keys:
                raise fail(
                    'type = "keys" needs keys = { alice = "${ALICE_KEY}" } (a name to its key)',
                    "keys" if "keys" in raw else "type",
                )
            for name, template in keys.items():
                if not _NAME.match(name):
                    raise fail("a key's name must be 1 to 32 letters, digits, '_' or '-'", "keys")
                if not _is_key_template(template):
                    raise fail(
                        f'key {name!r} must take its value from the environment, as "${{VAR}}": '
                        "a key written in the file is refused",
                        "keys",
                    )
            return AuthConfig(type="keys", keys=dict(keys))
        issuer = raw.get("issuer")
        if not isinstance(issuer, str) or not _is_served_url(issuer):
            raise fail(
                'type = "oauth" needs issuer = "https://..." (http only on a loopback address)',
                "issuer" if "issuer" in raw else "type",
            )
        audience = raw.get("audience")
        if audience is not None and (not isinstance(audience, str) or not _is_url(audience)):
            raise fail("audience must be an absolute URL (default: the gateway's own)", "audience")
        scopes = raw.get("scopes", [])
        if not isinstance(scopes, list) or not all(
            isinstance(s, str) and s and not re.search(r"\s", s) for s in scopes
        ):
            raise fail('scopes must be a list of scopes, such as ["mcp:tools"]', "scopes")
        return AuthConfig(type="oauth", issuer=issuer, audience=audience, scopes=tuple(scopes))


def _is_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _is_served_url(value: str) -> bool:
    """An https URL, or an http one on a loopback address (where no one can read it on the way)."""
    if not _is_url(value):
        return False
    parts = urlsplit(value)
    return parts.scheme == "https" or is_loopback(parts.hostname or "")


def _is_storage(value: object) -> bool:
    """``memory://``, or a Redis URL without a password (a secret is never written in the file)."""
    if value == "memory://":
        return True
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("redis", "rediss", "redis+unix") and parts.password is None


def _unknown_key(
    raw: Mapping[str, object], known: Collection[str], where: str
) -> tuple[str, str] | None:
    """The first key of ``raw`` that is not ``known``, and the words that refuse it, or ``None``:
    one wording for every table, ``unknown key 'x' in WHERE; the keys are a, b and c``."""
    for key in raw:
        if key not in known:
            *rest, last = sorted(known)
            listing = f"{', '.join(rest)} and {last}" if rest else last
            return key, f"unknown key {key!r} in {where}; the keys are {listing}"
    return None


def _counted(value: object) -> bool:
    """A whole number above 0 (``true`` is no number here)."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def _positive(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value > 0
    )
