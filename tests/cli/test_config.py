"""The gateway's configuration keys and policy, read in process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import amends_toolkit as at
from amends_toolkit.cli._config import (
    ApprovalConfig,
    AuthConfig,
    ConfigError,
    LimitsConfig,
    MatchConfig,
    PolicyConfig,
    ProfileConfig,
    expand_header,
    load_config,
)
from amends_toolkit.cli._policy import GlobPolicy

FULL = """
[[sources]]
name = "tasks"
mcp = "https://tasks.example.com/mcp"
headers = { Authorization = "Bearer ${TASKS_TOKEN}", X-Team = "${TEAM}" }
timeout = 30

[[sources]]
name = "files"
stdio = ["npx", "-y", "server-filesystem", "/srv"]
env = { LOG = "info" }
cwd = "/tmp"

[[sources]]
name = "notes"
openapi = "notes.yaml"
base_url = "https://notes.example.com/v1"

[[sources]]
name = "remote"
mcp = "https://remote.example.com/mcp"
auth = "oauth"
token_file = "tokens/remote.json"

[policy]
allow = ["tasks__list_*"]
approve = ["tasks__delete_*"]
block = ["files__*"]

[serve]
host = "0.0.0.0"
port = 9000
path = "/tools"
presentation = "search"
refresh_interval = 300
max_in_flight_per_caller = 8
max_sessions = 50
session_idle_timeout = 60
max_connections = 100
header_timeout = 2.5
body_timeout = 5
allowed_hosts = ["gw.example.com", "gw.example.com:8443"]
allowed_origins = ["https://app.example.com"]
metrics_key = "${METRICS_KEY}"
limits_storage = "redis://127.0.0.1:6379/0"

[auth]
type = "keys"
keys = { alice = "${ALICE_KEY}", ci = "${CI_KEY}" }
"""
AUTH = '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[auth]\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    return path


def test_every_binding_key_is_read(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL))
    tasks, files, notes, remote = config.sources
    assert (tasks.kind, tasks.target, tasks.timeout) == (
        "mcp",
        "https://tasks.example.com/mcp",
        30.0,
    )
    assert tasks.headers == {"Authorization": "Bearer ${TASKS_TOKEN}", "X-Team": "${TEAM}"}
    assert (files.kind, files.target, files.args) == (
        "stdio",
        "npx",
        ("-y", "server-filesystem", "/srv"),
    )
    assert (files.env, files.cwd) == ({"LOG": "info"}, "/tmp")
    assert (notes.kind, notes.target) == ("openapi", str(tmp_path / "notes.yaml"))
    assert notes.base_url == "https://notes.example.com/v1"
    assert (remote.auth, remote.token_file) == ("oauth", tmp_path / "tokens/remote.json")
    assert config.policy == PolicyConfig(
        allow=("tasks__list_*",), approve=("tasks__delete_*",), block=("files__*",)
    )
    serve = config.serve
    assert (serve.host, serve.port, serve.path, serve.presentation) == (
        "0.0.0.0",
        9000,
        "/tools",
        "search",
    )
    assert serve.refresh_interval == 300.0
    assert serve.max_in_flight_per_caller == 8
    # Half of the 64 slots a source is spawned with, unless told.
    assert (
        load_config(
            write(tmp_path, FULL.replace("max_in_flight_per_caller = 8", ""))
        ).serve.max_in_flight_per_caller
        == 32
    )
    assert (serve.max_sessions, serve.session_idle_timeout, serve.max_connections) == (50, 60, 100)
    assert (serve.header_timeout, serve.body_timeout) == (2.5, 5.0)
    assert serve.allowed_hosts == ("gw.example.com", "gw.example.com:8443")
    assert serve.allowed_origins == ("https://app.example.com",)
    assert serve.metrics_key == "${METRICS_KEY}"
    assert serve.limits_storage == "redis://127.0.0.1:6379/0"
    assert config.auth == AuthConfig(type="keys", keys={"alice": "${ALICE_KEY}", "ci": "${CI_KEY}"})


def test_oauth_takes_an_issuer_and_optionally_an_audience_and_scopes(tmp_path: Path) -> None:
    full = AUTH + (
        'type = "oauth"\nissuer = "https://idp.example.com/"\n'
        'audience = "https://gw.example.com/mcp"\nscopes = ["mcp:tools", "mcp:read"]\n'
    )
    assert load_config(write(tmp_path, full)).auth == AuthConfig(
        type="oauth",
        issuer="https://idp.example.com/",
        audience="https://gw.example.com/mcp",
        scopes=("mcp:tools", "mcp:read"),
    )
    local = AUTH + 'type = "oauth"\nissuer = "http://127.0.0.1:3000"\n'
    assert load_config(write(tmp_path, local)).auth == AuthConfig(
        type="oauth", issuer="http://127.0.0.1:3000"
    )


def test_without_auth_the_file_reads_and_auth_is_none(tmp_path: Path) -> None:
    # The gateway refuses to start on it (tests/cli/test_auth.py); the file itself is not wrong.
    assert load_config(write(tmp_path, AUTH.removesuffix("[auth]\n"))).auth is None


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('[[sources]]\nname = "a"\nmcp = "ftp://x"\n', 3, "absolute http"),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\nheaders = { A = "literal" }\n',
            4,
            "secret written in the file",
        ),
        ('[[sources]]\nname = "a"\nmcp = "http://x/mcp"\nstdio = ["x"]\n', 4, "exactly one of"),
        ('[[sources]]\nname = "a"\nopenapi = "d.json"\n', 1, "needs base_url"),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[policy]\nallow = "a__*"\n',
            5,
            "list of glob patterns",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\n\npresentation = "all"\n',
            6,
            '"tools", "search" or "code"',
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\napproval_key = "s3cret"\n',
            5,
            'approval_key must take its value from the environment, as "${VAR}"',
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\ncode_approval = "yes"\n',
            5,
            'code_approval must be "split" or "ask"',
        ),
        ('[[sources]]\nname = "a"\nmcp = "http://x/mcp"\nauth = "oauth"\n', 4, "token_file"),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\nmax_in_flight_per_caller = 0\n',
            5,
            "max_in_flight_per_caller must be a whole number above 0",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\nmax_sessions = 0\n',
            5,
            "max_sessions must be a whole number above 0",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\nmax_connections = 1.5\n',
            5,
            "max_connections must be a whole number above 0",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\nheader_timeout = 0\n',
            5,
            "header_timeout must be a positive number of seconds",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[[sources]]\nname = "a"\nmcp = "http://y/mcp"\n',
            5,
            "two sources",
        ),
        (
            AUTH + 'type = "keys"\nkeys = { alice = "0123456789abcdef0123456789abcdef" }\n',
            6,
            "a key written in the file is refused",
        ),
        (
            AUTH + 'type = "keys"\nkeys = { alice = "Bearer ${ALICE_KEY}" }\n',
            6,
            "a key written in the file is refused",
        ),
        (AUTH + 'type = "keys"\n', 5, "needs keys"),
        (AUTH + 'type = "keys"\nkeys = { "a b" = "${K}" }\n', 6, "a key's name"),
        (
            AUTH + 'type = "keys"\nkeys = { a = "${K}" }\nissuer = "https://x"\n',
            7,
            'issuer goes with type = "oauth"',
        ),
        (AUTH + 'type = "none"\nkeys = { a = "${K}" }\n', 6, 'keys goes with type = "keys"'),
        (AUTH + 'type = "ldap"\n', 5, '"oauth", "keys" or "none"'),
        (AUTH + 'type = "none"\nrealm = "x"\n', 6, "unknown key 'realm' in [auth]"),
        (AUTH + 'type = "oauth"\n', 5, "needs issuer"),
        (
            AUTH + 'type = "oauth"\nissuer = "http://idp.example.com"\n',
            6,
            "http only on a loopback",
        ),
        (AUTH + 'type = "oauth"\nissuer = "http://10.0.0.1"\n', 6, "http only on a loopback"),
        (AUTH + 'type = "oauth"\nissuer = "https://x"\naudience = "gw"\n', 7, "absolute URL"),
        (AUTH + 'type = "oauth"\nissuer = "https://x"\nscopes = "mcp"\n', 7, "list of scopes"),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\nhost = "0.0.0.0"\n'
            '[auth]\ntype = "none"\n',
            7,
            "loopback [serve] host only",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\nmetrics_key = "k"\n',
            5,
            "a key written in the file is refused",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\n'
            'limits_storage = "redis://:hunter2@127.0.0.1:6379"\n',
            5,
            "without a password",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\n'
            'limits_storage = "memcached://127.0.0.1:11211"\n',
            5,
            'must be "memory://" or a Redis URL',
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\nallowed_hosts = "x"\n',
            5,
            "allowed_hosts must be a list",
        ),
        (
            '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n[serve]\n'
            'allowed_origins = ["https://x/app"]\n',
            5,
            "no path",
        ),
    ],
)
def test_a_wrong_key_is_refused_with_its_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert words in str(error.value)


def test_a_header_comes_from_the_environment_or_not_at_all() -> None:
    assert expand_header("Bearer ${T}", {"T": "abc"}) == "Bearer abc"
    assert expand_header("${T}", {"T": "abc"}) == "abc"
    with pytest.raises(KeyError, match="T"):
        expand_header("${T}", {})


def test_the_most_restrictive_match_wins_and_an_unnamed_tool_is_blocked() -> None:
    policy = GlobPolicy(
        PolicyConfig(
            allow=("tasks__*",), approve=("tasks__delete_*",), block=("tasks__delete_all",)
        )
    )

    def tool(name: str) -> at.ToolDefinition:
        return at.ToolDefinition(name=name, description="", input_schema={"type": "object"})

    assert policy("tasks", tool("list")) == "allow"
    assert policy("tasks", tool("delete_one")) == "approve"
    assert policy("tasks", tool("delete_all")) == "block"
    assert policy("files", tool("read")) == "block"
    assert policy.unnamed == ["files__read"]


def test_a_pattern_names_a_tool_by_its_model_facing_name_or_its_upstream_name() -> None:
    long = "export_every_record_of_every_table_to_a_file_in_the_archive_right_away"
    policy = GlobPolicy(
        PolicyConfig(
            allow=("tasks__*", "notes__list.notes", "read_*"),
            block=("tasks__admin.delete", long, "tasks__drop_*"),
        )
    )

    def tool(name: str) -> at.ToolDefinition:
        return at.ToolDefinition(name=name, description="", input_schema={"type": "object"})

    # block wins over allow whichever name it matched: the upstream's after its source's, the
    # upstream's alone (a cut name), or the model-facing one (the upstream's is drop.all).
    assert policy("tasks", tool("admin.delete")) == "block"
    assert policy("tasks", tool(long)) == "block"
    assert policy("tasks", tool("drop.all")) == "block"
    assert policy("tasks", tool("admin_delete")) == "allow"  # another tool
    assert policy("notes", tool("list.notes")) == "allow"  # by its upstream name only
    # allow never reads a name alone: an upstream's name must not reach another source's allow.
    assert policy("notes", tool("read_notes")) == "block"
    assert policy.unnamed == ["notes__read_notes"]


def test_the_patterns_that_named_no_tool_since_a_reset_are_unmatched() -> None:
    policy = GlobPolicy(
        PolicyConfig(
            allow=("tasks__*", "files__*"),
            approve=("tasks__delete_*",),
            block=("tasks__delete_all", "tasks__nothing", "admin.*"),
        )
    )

    def tool(name: str) -> at.ToolDefinition:
        return at.ToolDefinition(name=name, description="", input_schema={"type": "object"})

    assert len(policy.unmatched()) == 6
    for name in ("list", "delete_all", "admin.purge"):
        policy("tasks", tool(name))
    # A pattern that named a tool counts, even one that a more restrictive pattern overruled.
    assert policy.unmatched() == ["block: tasks__nothing", "allow: files__*"]
    policy.reset()
    policy("files", tool("read"))
    assert policy.unmatched() == [
        "block: tasks__delete_all",
        "block: tasks__nothing",
        "block: admin.*",
        "approve: tasks__delete_*",
        "allow: tasks__*",
    ]
    assert policy.unnamed == []


def test_the_configuration_reads_without_the_gateways_packages() -> None:
    # Every command explains its errors through ConfigError: it must not need the gateway extra.
    program = (
        "import sys, amends_toolkit.cli._config; "
        "print(sorted({'mcp', 'mcp_types', 'uvicorn', 'starlette'} & set(sys.modules)))"
    )
    found = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"


PROFILED = """
[[sources]]
name = "tasks"
mcp = "http://x/mcp"

[[sources]]
name = "files"
mcp = "http://y/mcp"

[auth]
type = "keys"
keys = { alice = "${ALICE_KEY}", ci = "${CI_KEY}" }

[[profiles]]
name = "eng"
match = { keys = ["alice"] }
sources = ["tasks"]
presentation = "search"
policy = { allow = ["tasks__*"], approve = ["tasks__delete_*"], block = [] }
limits = { calls_per_minute = 600, max_in_flight = 16 }

[[profiles]]
name = "ci"
match = { keys = ["ci"] }
"""


def test_profiles_are_read_in_order_with_their_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, PROFILED))
    eng, ci = config.profiles
    assert eng == ProfileConfig(
        name="eng",
        match=MatchConfig(kind="keys", values=("alice",)),
        sources=("tasks",),
        presentation="search",
        policy=PolicyConfig(allow=("tasks__*",), approve=("tasks__delete_*",)),
        limits=LimitsConfig(calls_per_minute=600, max_in_flight=16),
    )
    # Every source, [serve]'s presentation, a policy that allows nothing, no limits.
    assert (ci.sources, ci.presentation, ci.policy, ci.limits) == (
        None,
        None,
        PolicyConfig(),
        LimitsConfig(),
    )
    # No [policy]: a caller no profile matches is refused, not served an empty policy.
    assert config.policy is None


def test_an_oauth_profile_matches_subjects_scopes_or_claims(tmp_path: Path) -> None:
    text = AUTH + (
        'type = "oauth"\nissuer = "https://idp.example.com/"\n'
        '[[profiles]]\nname = "eng"\nmatch = { claims = { groups = "eng", admin = true } }\n'
        '[[profiles]]\nname = "tools"\nmatch = { scopes = ["mcp:tools"] }\n'
        '[[profiles]]\nname = "me"\nmatch = { subjects = ["user-1"] }\n'
    )
    eng, tools, me = load_config(write(tmp_path, text)).profiles
    assert eng.match == MatchConfig(kind="claims", claims={"groups": "eng", "admin": True})
    assert tools.match == MatchConfig(kind="scopes", values=("mcp:tools",))
    assert me.match == MatchConfig(kind="subjects", values=("user-1",))


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        (
            ('sources = ["tasks"]', 'sources = ["tasks", "mail"]'),
            "sources",
            "no source is named 'mail'",
        ),
        (('keys = ["alice"]', 'keys = ["carol"]'), "match", "no key of [auth] is named 'carol'"),
        (
            ('keys = ["alice"]', 'subjects = ["u"]'),
            "match",
            'goes with [auth] type = "oauth"',
        ),
        (('{ keys = ["alice"] }', '{ keys = ["alice"], subjects = ["u"] }'), "match", "one kind"),
        (('{ keys = ["alice"] }', '{ groups = "eng" }'), "match", "one kind"),
        (('keys = ["alice"]', "keys = []"), "match", "must be a list of names"),
        (('presentation = "search"', 'presentation = "menu"'), "presentation", "must be"),
        (('allow = ["tasks__*"]', 'allow = "tasks__*"'), "policy", "list of glob patterns"),
        (("block = []", "deny = []"), "policy", "unknown key 'deny'"),
        (('name = "eng"', 'name = "ci"'), "name", "two profiles are named 'ci'"),
        (('name = "eng"', 'name = "default"'), "name", "[policy]'s"),
        (("max_in_flight = 16", "max_in_flight = 0"), "limits", "whole number above 0"),
        (("calls_per_minute = 600", "calls_per_minute = 1.5"), "limits", "whole number above 0"),
        (("calls_per_minute = 600", "calls_per_hour = 600"), "limits", "unknown key"),
        (
            ("limits = { calls_per_minute = 600, max_in_flight = 16 }", "limits = 600"),
            "limits",
            "must be a table",
        ),
    ],
)
def test_a_wrong_profile_is_refused_with_its_line(
    tmp_path: Path, change: tuple[str, str], key: str, words: str
) -> None:
    text = PROFILED.replace(*change, 1)
    assert text != PROFILED
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    lines = text.splitlines()
    first = lines.index("[[profiles]]")
    # The line of the key in the profile it is wrong in (the second profile for a twice-used name).
    start = lines.index("[[profiles]]", first + 1) if "two profiles" in words else first
    line = next(n for n, t in enumerate(lines[start:], start=start + 1) if t.startswith(f"{key} ="))
    assert str(error.value).startswith(f"{path}:{line}: "), error.value
    assert words in str(error.value)


APPROVED = """
[[sources]]
name = "tasks"
mcp = "http://x/mcp"

[auth]
type = "keys"
keys = { alice = "${ALICE_KEY}", ops = "${OPS_KEY}" }

[approval]
by = "approvers"
approvers = { keys = ["ops"] }
timeout = 60
store = "approvals.db"
webhook = "https://hooks.example.com/approvals"
max_pending = 50
max_pending_per_caller = 5

[[profiles]]
name = "eng"
match = { keys = ["alice"] }
approval = { by = "either", approvers = { keys = ["ops", "alice"] }, timeout = 30 }

[[profiles]]
name = "ci"
match = { keys = ["ops"] }
"""


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            ('mcp = "http://x/mcp"', 'mcp = "http://x/mcp"\nzz = 1'),
            "in a source; the keys are auth, ",
        ),
        (("[auth]", "[serve]\nzz = 1\n[auth]"), "in [serve]; the keys are "),
        (('name = "ci"', 'name = "ci"\nzz = 1'), "in [[profiles]]; the keys are approval, "),
        (("block = []", "zz = []"), "; the keys are allow, approve and block"),
        (
            ("max_in_flight = 16", "zz = 16"),
            "in limits; the keys are calls_per_minute and max_in_flight",
        ),
        (
            ('presentation = "search"', "approval = { zz = 1 }"),
            "in approval; the keys are approvers, by and timeout",
        ),
    ],
)
def test_every_table_refuses_an_unknown_key_in_the_same_words(
    tmp_path: Path, change: tuple[str, str], words: str
) -> None:
    text = PROFILED.replace(*change, 1)
    assert text != PROFILED
    with pytest.raises(ConfigError, match=r"unknown key 'zz' in ") as error:
        load_config(write(tmp_path, text))
    # Each names the table and lists its keys, the last after "and".
    message = str(error.value)
    assert words in message, message
    assert re.search(r"; the keys are (\w+, )*\w+ and \w+$", message), message


def test_approval_is_read_per_profile_and_for_the_default_profile(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, APPROVED))
    assert config.approval == ApprovalConfig(
        by="approvers", approvers=MatchConfig(kind="keys", values=("ops",)), timeout=60.0
    )
    assert config.approval_store == tmp_path / "approvals.db"
    assert config.approval_webhook == "https://hooks.example.com/approvals"
    assert (config.approval_max_pending, config.approval_max_pending_per_caller) == (50, 5)
    eng, ci = config.profiles
    assert eng.approval == ApprovalConfig(
        by="either", approvers=MatchConfig(kind="keys", values=("ops", "alice")), timeout=30.0
    )
    # No approval: either, no approvers (not [approval]'s), five minutes.
    assert ci.approval == ApprovalConfig()
    assert ci.approval.timeout == 300.0
    bare = load_config(write(tmp_path, APPROVED.split("[approval]")[0]))
    assert (bare.approval, bare.approval_store, bare.approval_webhook) == (
        ApprovalConfig(),
        None,
        None,
    )


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        (('by = "approvers"', 'by = "anyone"'), "by", 'by must be "caller", "approvers" or'),
        (("timeout = 60", "timeout = 0"), "timeout", "timeout must be a positive number"),
        (("timeout = 60", 'timeout = "soon"'), "timeout", "timeout must be a positive number"),
        (
            ('approvers = { keys = ["ops"] }', 'approvers = { keys = ["mallory"] }'),
            "approvers",
            "no key of [auth] is named 'mallory'",
        ),
        (
            ('approvers = { keys = ["ops"] }', 'approvers = { subjects = ["x"] }'),
            "approvers",
            'approvers = { subjects = ... } goes with [auth] type = "oauth"',
        ),
        (
            ('approvers = { keys = ["ops"] }', 'approvers = ["ops"]'),
            "approvers",
            "approvers must name one kind of caller",
        ),
        (('store = "approvals.db"', 'store = ""'), "store", "store must be the path of a SQLite"),
        (
            ('webhook = "https://hooks.example.com/approvals"', 'webhook = "http://10.0.0.7/"'),
            "webhook",
            "webhook must be an https:// URL (http:// on a loopback address only)",
        ),
        (
            (
                'webhook = "https://hooks.example.com/approvals"',
                'webhook = "https://u:hunter2@hooks.example.com/"',
            ),
            "webhook",
            "webhook must be an https:// URL",
        ),
        (("max_pending = 50", "max_pending = 0"), "max_pending", "max_pending must be a whole"),
        (("max_pending = 50", "whom = 1"), "whom", "unknown key 'whom' in [approval]"),
    ],
)
def test_a_wrong_approval_table_is_refused_with_its_line(
    tmp_path: Path, change: tuple[str, str], key: str, words: str
) -> None:
    text = APPROVED.replace(*change, 1)
    assert text != APPROVED
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    lines = text.splitlines()
    line = next(n for n, t in enumerate(lines, start=1) if t.startswith(f"{key} ="))
    assert str(error.value).startswith(f"{path}:{line}: "), error.value
    assert words in str(error.value)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ('by = "either"', 'by must be "caller", "approvers" or "either"'),
        ("timeout = -1", "timeout must be a positive number"),
        ('store = "x.db"', "store is the whole gateway's: write it in [approval]"),
        ('by = "caller", approvers = { keys = ["ops"] }', 'by = "caller" asks the calling'),
    ],
)
def test_a_wrong_profile_approval_is_refused_at_the_approval_line(
    tmp_path: Path, change: str, words: str
) -> None:
    original = 'by = "either", approvers = { keys = ["ops", "alice"] }, timeout = 30'
    text = APPROVED.replace(original, change.replace("either", "nobody"))
    assert text != APPROVED
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.startswith("approval = {"))
    assert str(error.value).startswith(f"{path}:{line}: "), error.value
    assert words in str(error.value)


def test_the_issues_approvals_table_is_refused_naming_the_one_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\(one table: \[approval\] store\)"):
        load_config(write(tmp_path, AUTH + 'type = "none"\n[approvals]\nstore = "a.db"\n'))


PER_CALLER = """
[[sources]]
name = "github"
mcp = "https://api.example.com/mcp/"
credentials = "per-caller"
headers = { Authorization = "Bearer ${caller:github_token}", X-App = "${APP_ID}" }

[auth]
type = "keys"
keys = { alice = "${ALICE_KEY}" }

[credentials]
store = "tokens.db"
max_callers = 50
"""


def test_a_per_caller_source_takes_its_callers_secrets_from_the_store(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, PER_CALLER))
    (source,) = config.sources
    assert source.credentials == "per-caller"
    assert source.headers["Authorization"] == "Bearer ${caller:github_token}"
    assert config.credentials is not None
    assert config.credentials.store == str(tmp_path / "tokens.db")
    assert config.credentials.max_callers == 50
    shared = load_config(write(tmp_path, FULL)).sources[0]
    assert shared.credentials == "shared"


SOURCE = '[[sources]]\nname = "a"\nmcp = "http://x/mcp"\n'
KEYED = '[auth]\ntype = "keys"\nkeys = { alice = "${ALICE_KEY}" }\n'
STORE = '[credentials]\nstore = "tokens.db"\n'
SECRET_HEADER = 'headers = { Authorization = "Bearer ${caller:token}" }\n'


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (SOURCE + 'credentials = "mine"\n', 4, '"shared" or "per-caller"'),
        (SOURCE + SECRET_HEADER + KEYED + STORE, 4, 'needs credentials = "per-caller"'),
        (
            '[[sources]]\nname = "a"\nstdio = ["x"]\ncredentials = "per-caller"\n',
            4,
            "for mcp and openapi sources",
        ),
        (SOURCE + 'credentials = "per-caller"\n' + SECRET_HEADER + KEYED, 4, "add a [credentials]"),
        (
            SOURCE
            + 'credentials = "per-caller"\n'
            + SECRET_HEADER
            + '[auth]\ntype = "none"\n'
            + STORE,
            4,
            'needs callers the gateway knows: [auth] type = "keys" or "oauth"',
        ),
        (SOURCE + 'credentials = "per-caller"\n' + KEYED + STORE, 4, "needs what is each caller's"),
        (
            SOURCE
            + 'credentials = "per-caller"\nauth = "oauth"\ntoken_file = "t.json"\n'
            + KEYED
            + STORE,
            6,
            "not in a token_file",
        ),
        (
            SOURCE + 'headers = { A = "Bearer ${caller:bad name}" }\ncredentials = "per-caller"\n',
            4,
            "secret written in the file",
        ),
        (SOURCE + '[credentials]\nstore = "redis://:pw@127.0.0.1:6379"\n', 5, "no password"),
        (SOURCE + '[credentials]\nstore = ""\n', 5, "store must say where"),
        (SOURCE + STORE + "max_callers = 0\n", 6, "max_callers must be a whole number above 0"),
        (SOURCE + STORE + 'key = "x"\n', 6, "unknown key 'key' in [credentials]"),
    ],
)
def test_a_per_caller_source_used_wrong_is_refused_with_its_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value).startswith(f"{path}:{line}: "), error.value
    assert words in str(error.value)
