"""``inspect``, ``call``, ``demo`` and the command's errors, each run as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from mcp import Client

import amends_toolkit as at
from amends_toolkit._extras import _CLONE as CLONE
from amends_toolkit.cli import main
from amends_toolkit.cli._sources import source_from_argument
from conformance._servers import closed_port, serve

from .gateway import SRC, GatewayProcess
from .upstream import tasks_app

CORPUS = Path(__file__).resolve().parents[1] / "data" / "openapi-corpus"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amends_toolkit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC, "NO_COLOR": "1", **(env or {})},
    )


@pytest.fixture(scope="module")
def tasks_url() -> Iterator[str]:
    with serve(tasks_app()) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_inspect_prints_an_mcp_servers_tools_one_line_each(tasks_url: str) -> None:
    done = run(
        "inspect", tasks_url, "--header", "Authorization=Bearer ${TOKEN}", env={"TOKEN": "t0k3n"}
    )
    assert done.returncode == 0, done.stderr
    rows = dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    assert rows["list_tasks"].startswith("read-only\tList the tasks.")
    assert rows["delete_task"].startswith("destructive\t")
    assert set(rows) == {"list_tasks", "delete_task", "secret", "grow", "slow"}
    assert "t0k3n" not in done.stdout + done.stderr


def test_inspect_json_is_the_catalog_as_the_codec_writes_it(tasks_url: str) -> None:
    done = run("inspect", tasks_url, "--json")
    assert done.returncode == 0, done.stderr
    definitions = at.catalog.load(list[at.ToolDefinition], json.loads(done.stdout))
    assert [d.name for d in definitions] == ["list_tasks", "delete_task", "secret", "grow", "slow"]


def test_inspect_an_openapi_document_lists_what_it_skipped_and_why() -> None:
    done = run("inspect", str(CORPUS / "meilisearch-v1.4-3.1.yaml"), "--schemas")
    assert done.returncode == 0, done.stderr
    assert "== 8 operations skipped" in done.stdout
    skipped = [line for line in done.stdout.splitlines() if "\tpath_mismatch\t" in line]
    assert "GET /keys/{uid_or_key}\tpath_mismatch\t" in "\n".join(skipped)
    assert '"type": "object"' in done.stdout or '"type":"object"' in done.stdout


def test_call_prints_the_result_or_the_failure(tasks_url: str) -> None:
    done = run("call", tasks_url, "list_tasks", "{}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"result": ["water the plants", "buy bread"]}
    failed = run("call", tasks_url, "delete_task", '{"task_id": "x"}')
    assert failed.returncode == 1
    assert failed.stderr.strip().splitlines()[-1].startswith("error: InvalidInputError:")


def test_call_a_stdio_server_after_a_double_dash() -> None:
    upstream = str(Path(__file__).with_name("upstream.py"))
    done = run("call", "add", '{"a": 2, "b": 40}', "--", sys.executable, upstream, "stdio")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"result": 42}


# The errors run the command in this process (main() is what the console script calls).


def test_an_unreachable_server_is_one_line_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", f"http://127.0.0.1:{closed_port()}/mcp"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("error: UnavailableError")
    assert "is the server running" in lines[-1]
    assert not any("Traceback" in line for line in lines)


def test_a_stdio_server_that_will_not_start_is_not_told_of_an_address(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # issue 32: "... install it on the PATH) (is the server running, and the address right?)"
    assert main(["inspect", "--", "amends-toolkit-no-such-server"]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: UnavailableError: ")
    assert last.endswith("(give the program's full path, or install it on the PATH)")
    assert "address" not in last


def test_a_wrong_key_in_the_config_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[[sources]]\nname = "tasks"\nmcp = "http://127.0.0.1:1/mcp"\ntimout = 3\n')
    assert main(["serve", str(config)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"error: {config}:4: unknown key 'timout' in a source; the keys are auth, base_url, "
        "credentials, cwd, env, exchange, headers, mcp, name, openapi, propagate_trace, "
        "redirect_uri, stdio, timeout and token_file"
    )


def test_a_secret_written_in_a_header_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["inspect", "http://127.0.0.1:1/mcp", "--header", "Authorization=Bearer s3cr3t"]) == 1
    )
    err = capsys.readouterr().err
    assert "read from the environment" in err
    assert "s3cr3t" not in err


def test_a_header_variable_that_is_not_set_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "http://127.0.0.1:1/mcp", "--header", "X-Key=${AMENDS_UNSET_VAR}"]) == 1
    assert "AMENDS_UNSET_VAR, which is not set" in capsys.readouterr().err


def test_the_demo_runs_end_to_end() -> None:
    done = run("demo")
    assert done.returncode == 0, done.stderr[-2000:]
    for heading in (
        "== The toolkit of the turn",
        "== The model's calls, each read as a result",
        "== Without credentials",
        "== tool_search('remove a task')",
        "== execute: three tool calls in one run",
        "== Actors",
    ):
        assert heading in done.stdout
    assert '"code": "AuthenticationError"' in done.stdout
    assert "demo-token-not-for-models" not in done.stdout


def test_the_cli_package_exports_main_and_imports_no_optional_dependency() -> None:
    import amends_toolkit.cli

    assert amends_toolkit.cli.__all__ == ("main",)
    script = (
        "import sys, amends_toolkit.cli; "
        "print(sorted(m for m in ('mcp', 'uvicorn', 'prometheus_client', 'fastmcp') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": SRC},
    ).stdout.strip()
    assert loaded == "[]"


# Without an extra: the command is run with the extra's package made unimportable (``None`` in
# ``sys.modules``), as a fresh install without the extra would be.

_WITHOUT = (
    "import sys; sys.modules[sys.argv[1]] = None; from amends_toolkit.cli import main; "
    "sys.exit(main(sys.argv[2:]))"
)


@pytest.mark.parametrize(
    ("missing", "command", "extra"),
    [
        ("rich", ["serve", "gateway.toml"], "gateway"),
        ("uvicorn", ["serve", "gateway.toml"], "gateway"),
        ("rich", ["inspect", "http://127.0.0.1:1/mcp"], "gateway"),
        ("httpx2", ["call", "http://127.0.0.1:1/mcp", "tool", "{}"], "gateway"),
        ("rich", ["demo"], "demo"),
        ("fastmcp", ["demo"], "demo"),
    ],
)
def test_a_command_without_its_extra_names_the_pip_line_without_a_traceback(
    missing: str, command: list[str], extra: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT, missing, *command],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": SRC, "NO_COLOR": "1"},
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"error: amends-toolkit {command[0]} needs the {extra!r} extra ({missing} is not "
        f"installed): pip install -e '{CLONE}[{extra}]'\n"
    )


# The command's rough edges (issue 32, item 5).


@pytest.mark.parametrize(
    "target",
    [[str(CORPUS / "meilisearch-v1.4-3.1.yaml"), "--schemas"], ["tasks"]],
    ids=["more-than-a-pipe-holds", "less"],
)
def test_a_reader_that_goes_away_ends_the_command_quietly(
    target: list[str], tasks_url: str
) -> None:
    # As `amends-toolkit inspect ... | head` does: the pipe's reader is gone before it is read.
    reading, writing = os.pipe()
    os.close(reading)
    args = [tasks_url if word == "tasks" else word for word in target]
    # stdout buffered, as a person's is: what stays in the buffer fails only when flushed.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "amends_toolkit", "inspect", *args],
            stdout=writing,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**environment, "PYTHONPATH": SRC, "NO_COLOR": "1"},
        )
    finally:
        os.close(writing)
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["amends-toolkit: Discovering the tools ..."]


def test_an_error_of_the_commands_source_is_not_named_source_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", f"http://127.0.0.1:{closed_port()}/mcp"]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: UnavailableError: tools/list: POST http://127.0.0.1:")
    assert "source source" not in last


def test_a_document_the_command_cannot_read_is_not_named_source_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 32: "error: source 'source': notes.yaml: the document is not JSON, ..."
    document = tmp_path / "notes.yaml"
    document.write_text("openapi: [3.0\n")
    assert main(["inspect", str(document)]) == 1
    err = capsys.readouterr().err
    assert f"error: {document}: the document is neither JSON nor YAML: " in err, err
    assert "source 'source'" not in err


def test_a_wrong_tool_name_is_told_the_near_names(tasks_url: str) -> None:
    done = run("call", tasks_url, "list_task", "{}")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "error: NotFoundError: There is no such tool. Did you mean list_tasks or delete_task?"
    )


def test_a_name_near_none_is_told_the_tools(tasks_url: str) -> None:
    done = run("call", tasks_url, "zzz", "{}")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "error: NotFoundError: There is no such tool. The tools: delete_task, grow, list_tasks, "
        "secret, slow."
    )


def test_the_tools_told_are_bounded(tmp_path: Path) -> None:
    document = many_operations(tmp_path, 40)
    done = run("call", str(document), "zzz", "{}")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "error: NotFoundError: There is no such tool. The tools: "
        + ", ".join(f"op_{index:02}" for index in range(10))
        + f", and 30 more (amends-toolkit inspect {document} lists them)."
    )


@pytest.mark.parametrize(
    ("raw", "told"),
    [
        ("{not json", "error: the input is not JSON: Expecting property name enclosed in "),
        ("[1, 2]", "error: the input must be a JSON object, such as '{}'"),
    ],
)
def test_bad_input_is_told_before_the_source_is_reached(raw: str, told: str) -> None:
    # Nothing listens there: had the source been reached first, the error would say so.
    done = run("call", f"http://127.0.0.1:{closed_port()}/mcp", "list_tasks", raw)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.splitlines()[0]]
    assert done.stderr.startswith(told)


def many_operations(directory: Path, count: int) -> Path:
    """An OpenAPI document of ``count`` operations, ``op_00`` on."""
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Many", "version": "1"},
        "paths": {
            f"/op/{index}": {"get": {"operationId": f"op_{index:02}", "summary": "An operation."}}
            for index in range(count)
        },
    }
    path = directory / "many.json"
    path.write_text(json.dumps(document))
    return path


def test_the_startup_note_of_unnamed_tools_is_bounded_and_says_where_all_are(
    tmp_path: Path,
) -> None:
    many_operations(tmp_path, 95)
    config = tmp_path / "gateway.toml"
    config.write_text(
        '[[sources]]\nname = "many"\nopenapi = "many.json"\nbase_url = "http://127.0.0.1:1"\n\n'
        '[policy]\nallow = ["many__op_00"]\n\n[auth]\ntype = "none"\n'
    )
    gateway = GatewayProcess(config)
    try:
        gateway.wait_ready()
    finally:
        gateway.stop()
    (note,) = [line for line in gateway.lines if "no [policy] pattern names them" in line]
    assert note == (
        "amends-toolkit: 94 tools are blocked, as no [policy] pattern names them: "
        + ", ".join(f"many__op_{index:02}" for index in range(1, 11))
        + ", and 84 more (the log's gateway.unnamed line lists them all)"
    )
    (logged,) = gateway.events("gateway.unnamed")
    assert logged["tools"] == [f"many__op_{index:02}" for index in range(1, 95)]


@pytest.mark.anyio
async def test_serve_presentation_overrides_the_configs(tmp_path: Path) -> None:
    many_operations(tmp_path, 3)
    config = tmp_path / "gateway.toml"
    config.write_text(
        '[[sources]]\nname = "many"\nopenapi = "many.json"\nbase_url = "http://127.0.0.1:1"\n\n'
        '[policy]\nallow = ["many__*"]\n\n[serve]\npresentation = "tools"\n\n[auth]\ntype = "none"\n'
    )
    gateway = GatewayProcess(config, "--presentation", "search")
    try:
        url = gateway.wait_ready()
        async with Client(url, cache=None) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
    finally:
        gateway.stop()
    assert listed == ["tool_search", "tool_call"]


def test_serve_presentation_takes_only_a_presentation(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "gateway.toml", "--presentation", "cards"])
    assert "invalid choice: 'cards' (choose from 'tools', 'search', 'code')" in (
        capsys.readouterr().err
    )


def test_the_help_of_base_url_names_the_default_it_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # issue 32: it said "(default 127.0.0.1)", which is no URL; --base-url wants one
    with pytest.raises(SystemExit):
        main(["call", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    config = source_from_argument([str(CORPUS / "README.md")], name="s", headers={}, base_url=None)
    assert f"(default {config.base_url})" in help_text


def test_ctrl_c_ends_a_command_as_a_cancellation_its_shielded_cleanup_survives() -> None:
    # asyncio's own Ctrl-C is the main task's Task.cancel(), which goes through every shield: a
    # Runtime being left, an embedded server stopping. A command sees Ctrl-C as anyio's.
    from amends_toolkit.cli._main import _interruptible

    finished: list[str] = []

    async def command() -> None:
        with anyio.CancelScope(shield=True):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, in the middle of the cleanup
            await anyio.lowlevel.checkpoint()  # where a native cancellation would land
            finished.append("cleanup")
        await anyio.sleep_forever()  # then Ctrl-C ends the command

    with pytest.raises(KeyboardInterrupt):
        anyio.run(_interruptible, command)
    assert finished == ["cleanup"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back


def test_a_command_that_ends_by_itself_gives_its_value() -> None:
    from amends_toolkit.cli._main import _interruptible

    async def command(value: int) -> int:
        await anyio.lowlevel.checkpoint()
        return value

    assert anyio.run(_interruptible, command, 7) == 7
