"""``amends-toolkit``: serve (an MCP gateway), inspect, call, credentials, demo.

A failure a person can act on (an unreachable server, a refused credential, a wrong key in the
configuration, with its line) is one line on stderr and exit status 1; ``--debug`` shows the
traceback and the library's debug log.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from amends_toolkit._errors import ToolSourceError, sole
from amends_toolkit._extras import require_extra
from amends_toolkit.cli._config import COMMAND_LINE_BASE_URL, PRESENTATIONS

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from amends_toolkit._json import JsonObject
    from amends_toolkit.cli._output import Output

__all__ = ("main",)

_GATEWAY = ("gateway", ("rich", "httpx2", "mcp", "mcp_types", "uvicorn", "prometheus_client"))
EXTRAS = {
    "serve": _GATEWAY,
    "inspect": ("gateway", ("rich", "httpx2")),
    "call": ("gateway", ("rich", "httpx2")),
    "credentials": ("gateway", ("rich", "cryptography")),
    "demo": ("demo", ("rich", "fastmcp", "uvicorn", "starlette", "pydantic_monty")),
}
"""The extra each command needs, and the top-level modules of it that the command imports
(``httpx2`` comes with the SDK); each is checked before the command imports any of them."""

T = TypeVar("T")

MAX_NAMES_SHOWN = 10
"""Tools ``call`` names when the tool asked for is none of the source's: the near ones, or the
first of all (``inspect`` lists them all)."""

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message"}


class JsonLines(logging.Formatter):
    """One JSON object a line: time, level, logger, event and the event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        line.update((k, v) for k, v in record.__dict__.items() if k not in _STANDARD)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _configure_logging(debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger("amends_toolkit")
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amends-toolkit",
        description="Tools for LLM agents from MCP servers, OpenAPI documents and HTTP operations.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # --debug is taken after the command too (its default stays the top level's).
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )

    serve = commands.add_parser(
        "serve", parents=[debug], help="serve a config's sources as one MCP server"
    )
    serve.add_argument("config", type=Path, metavar="CONFIG.toml")
    serve.add_argument(
        "--approve-on-terminal",
        action="store_true",
        help="make this terminal an approver: each pending approval (a call whose client"
        " cannot be asked) is asked here, one at a time",
    )
    serve.add_argument("--port", type=int, help="listen on this port, whatever the config says")
    serve.add_argument(
        "--presentation",
        choices=PRESENTATIONS,
        help="serve the tools, tool search or code mode, whatever the config says",
    )

    def source_options(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="NAME=${VAR}",
            help="a header whose value comes from the environment (quote it: 'X-Key=${KEY}')",
        )
        command.add_argument(
            "--base-url",
            help=f"where an OpenAPI document's requests go (default {COMMAND_LINE_BASE_URL})",
        )
        command.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")

    inspect = commands.add_parser(
        "inspect",
        parents=[debug],
        help="print a source's tools as a model sees them",
        usage="amends-toolkit inspect [options] (URL | OPENAPI-FILE | -- COMMAND [ARGS...])",
    )
    inspect.add_argument("target", nargs="*", help=argparse.SUPPRESS)
    inspect.add_argument("--schemas", action="store_true", help="print each input schema")
    inspect.add_argument("--json", action="store_true", help="print the catalog as JSON")
    source_options(inspect)

    call = commands.add_parser(
        "call",
        parents=[debug],
        help="run one tool of a source and print its result or its failure",
        usage="amends-toolkit call [options] (URL | OPENAPI-FILE) TOOL 'JSON'\n"
        "       amends-toolkit call [options] TOOL 'JSON' -- COMMAND [ARGS...]",
    )
    call.add_argument("target", nargs="*", help=argparse.SUPPRESS)
    source_options(call)

    credentials = commands.add_parser(
        "credentials",
        parents=[debug],
        help="set, list or delete callers' own credentials for per-caller sources",
    )
    credentials.add_argument(
        "--config",
        type=Path,
        default=Path("gateway.toml"),
        metavar="CONFIG.toml",
        help="the gateway's configuration, whose [credentials] store is used (gateway.toml)",
    )
    actions = credentials.add_subparsers(dest="action", required=True, metavar="ACTION")
    set_ = actions.add_parser(
        "set", help="keep a caller's secret, read from stdin (or asked for on a terminal)"
    )
    for action in (set_, actions.add_parser("delete", help="forget a caller's secret")):
        action.add_argument("caller", metavar="CALLER", help="the caller's id, as key:alice")
        action.add_argument("source", metavar="SOURCE")
        action.add_argument("name", metavar="NAME", nargs="?" if action is not set_ else None)
    actions.add_parser("list", help="who has what (never a value)")
    revoke = actions.add_parser("revoke", help="forget every credential of a caller")
    revoke.add_argument("caller", metavar="CALLER")
    actions.add_parser("new-key", help="print a fresh key for AMENDS_CREDENTIALS_KEY")

    commands.add_parser(
        "demo", parents=[debug], help="the demo: three sources, a policy, a session, presentations"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; the process's exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    stdio: list[str] | None = None
    if "--" in arguments:
        at = arguments.index("--")
        arguments, stdio = arguments[:at], arguments[at + 1 :]
    options = _parser().parse_args(arguments)
    extra, modules = EXTRAS[options.command]
    try:
        require_extra(extra=extra, modules=modules, needed_by=f"amends-toolkit {options.command}")
    except ModuleNotFoundError as missing:
        # Before Output, which needs rich: one plain line.
        print(f"error: {missing}", file=sys.stderr)
        return 1
    from amends_toolkit.cli._output import Output, silence

    output = Output()
    if options.debug:
        _configure_logging(True)
    try:
        if options.command == "serve":
            code = _serve(options, output)
        elif options.command == "credentials":
            from amends_toolkit.cli._admin import credentials_command

            code = anyio.run(_interruptible, credentials_command, options, output)
        elif options.command == "demo":
            from amends_toolkit.cli._demo import run_demo

            anyio.run(_interruptible, run_demo, output)
            code = 0
        else:
            code = anyio.run(_interruptible, _one_source, options, stdio, output)
        sys.stdout.flush()  # here, so that a reader gone is found here and not at the exit
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        if isinstance(sole(error), BrokenPipeError):
            # Its reader went away (`| head`): quietly, as Python's docs advise.
            silence(sys.stdout.fileno())
            return 1
        # A person reads it: one line, the traceback only when asked for.
        if options.debug:
            raise
        output.error(_explain(sole(error), stdio=stdio is not None))
        return 1


async def _interruptible(command: Callable[..., Awaitable[T]], *args: object) -> T:
    """``command(*args)``, ended by Ctrl-C (SIGINT) as a cancellation of anyio's, then raised
    as ``KeyboardInterrupt`` (exit 130).

    So its cleanup runs as its scopes shield it: asyncio's own handler cancels the main task
    natively (``Task.cancel()``), which goes through every shield, at whatever point the task
    is. A second Ctrl-C, while the first's cleanup runs, interrupts at once.
    """
    interrupted = False
    try:
        async with anyio.create_task_group() as tasks:

            async def watch(*, task_status: anyio.abc.TaskStatus[None]) -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT) as signals:
                    task_status.started()
                    async for _ in signals:
                        interrupted = True
                        tasks.cancel_scope.cancel()
                        return

            await tasks.start(watch)
            result = await command(*args)
            tasks.cancel_scope.cancel()
    except BaseException:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    if interrupted:
        raise KeyboardInterrupt
    return result


def _explain(error: BaseException, *, stdio: bool) -> str:
    """One line a person can act on; ``stdio``: the command's source is a stdio server, whose
    errors say themselves why it did not start or what it wrote as it died (it has no address)."""
    from amends_toolkit.cli._config import ConfigError

    if isinstance(error, ConfigError | OSError):
        return str(error)
    if isinstance(error, ToolSourceError):
        # The command's one source: its error says what failed, and where.
        advice = {
            "AuthenticationError": " (the server refused the credentials: check the headers)",
            "UnavailableError": "" if stdio else " (is the server running, and the address right?)",
        }.get(error.reason, "")
        return f"{error.reason}: {error.message}{advice}"
    return f"{type(error).__name__}: {error} (run with --debug for the traceback)"


def _near(name: str, names: list[str], inspect: str) -> str:
    """The names near ``name`` a person may have meant, else the first few of all."""
    near = difflib.get_close_matches(name, names, n=MAX_NAMES_SHOWN)
    if near:
        return f"Did you mean {' or '.join(near)}?"
    shown = ", ".join(names[:MAX_NAMES_SHOWN])
    more = len(names) - MAX_NAMES_SHOWN
    if more > 0:
        return f"The tools: {shown}, and {more} more ({inspect} lists them)."
    return f"The tools: {shown}."


def _serve(options: argparse.Namespace, output: Output) -> int:
    import attrs

    from amends_toolkit.cli._config import load_config
    from amends_toolkit.cli._gateway import Gateway

    config = load_config(options.config)
    if options.port is not None:
        config = attrs.evolve(config, serve=attrs.evolve(config.serve, port=options.port))
    if options.presentation is not None:
        config = attrs.evolve(
            config, serve=attrs.evolve(config.serve, presentation=options.presentation)
        )
    if not options.debug:
        _configure_logging(False)
    gateway = Gateway(config, output=output, approve_on_terminal=options.approve_on_terminal)
    anyio.run(gateway.run)
    return 0


async def _one_source(options: argparse.Namespace, stdio: list[str] | None, output: Output) -> int:
    from contextlib import AsyncExitStack

    import attrs

    from amends_toolkit import catalog
    from amends_toolkit.cli._config import ConfigError, is_env_template
    from amends_toolkit.cli._sources import build_source, source_from_argument
    from amends_toolkit.runtime import Runtime, source_toolkit

    positional = list(options.target)
    tool_input: tuple[str, JsonObject] | None = None
    if options.command == "call":
        if stdio is not None:
            wanted, source_words = 2, ["--", *stdio]
        else:
            wanted, source_words = 3, positional[:1]
        if len(positional) != wanted:
            raise ConfigError("call takes a source, a tool's name and its input as JSON")
        # Read before the source is reached: a typo costs no discovery.
        try:
            value = json.loads(positional[-1])
        except ValueError as error:
            raise ConfigError(f"the input is not JSON: {error}") from None
        if not isinstance(value, dict):
            raise ConfigError("the input must be a JSON object, such as '{}'")
        tool_input = (positional[-2], value)
    else:
        source_words = ["--", *stdio] if stdio is not None else positional
    headers: dict[str, str] = {}
    for header in options.header:
        name, _, template = header.partition("=")
        if not name or not is_env_template(template):
            raise ConfigError(
                f"--header {name or header!r}: write the value as ${{VAR}} (in single quotes) "
                "so it is read from the environment, never from the command line"
            )
        headers[name] = template
    config = attrs.evolve(
        source_from_argument(
            source_words, name="source", headers=headers, base_url=options.base_url
        ),
        timeout=options.timeout,
    )
    async with AsyncExitStack() as stack:
        try:
            built = await build_source(config, stack)
        except ConfigError as error:
            # The command's one source has no name a person gave it: its errors begin with what
            # the person wrote (the document's path), not "source 'source'".
            raise ConfigError(str(error).removeprefix(f"source {config.name!r}: ")) from None
        runtime = await stack.enter_async_context(Runtime())
        ref = await runtime.spawn(built.source)
        with output.status("Discovering the tools"):
            definitions = await ref.discover()
        if tool_input is not None:
            name, value = tool_input
            names = sorted(d.name for d in definitions)
            if name not in names:
                inspect = shlex.join(["amends-toolkit", "inspect", *source_words])
                output.error(f"NotFoundError: There is no such tool. {_near(name, names, inspect)}")
                return 1
            started = time.perf_counter()
            result = await source_toolkit(ref, definitions).invoke(name, value)
            if result.failure is not None:
                detail = f" ({result.error.message})" if options.debug and result.error else ""
                output.error(f"{result.failure.code}: {result.failure.message}{detail}")
                return 1
            output.json(result.value)
            output.note(f"answered in {(time.perf_counter() - started) * 1000:.0f} ms")
            return 0
        if options.json:
            print(json.dumps(catalog.dump(list(definitions)), ensure_ascii=False, indent=2))
            return 0
        rows = []
        for d in definitions:
            hints = [
                word
                for word, on in (
                    ("read-only", d.annotations.read_only),
                    ("destructive", d.annotations.destructive),
                    ("idempotent", d.annotations.idempotent),
                    ("open-world", d.annotations.open_world),
                )
                if on
            ]
            summary = (d.description or "").strip().splitlines()
            rows.append([d.name, ", ".join(hints), summary[0][:100] if summary else ""])
        output.title(f"{len(definitions)} tools")
        output.table(["tool", "hints", "description"], rows)
        if options.schemas:
            for d in definitions:
                output.title(d.name)
                output.json(d.input_schema)
        if built.skipped:
            output.title(f"{len(built.skipped)} operations skipped")
            output.table(
                ["operation", "reason", "detail"],
                [
                    [f"{s.method.upper() if s.method else '*'} {s.path}", s.reason, s.detail]
                    for s in built.skipped
                ],
            )
    return 0
