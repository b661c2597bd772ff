"""Sources from configuration: the host side of ``at.mcp.http``, ``at.mcp.stdio`` and OpenAPI.

The gateway builds one HTTP client per remote source, once, with that source's headers (read
from the environment) and, for ``auth = "oauth"``, the SDK's OAuth provider as its auth: the
credentials are the client's, never the source's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import httpx2

from amends_toolkit import http, mcp, openapi
from amends_toolkit.cli._config import ConfigError, SourceConfig, expand_header

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AsyncExitStack

    from amends_toolkit.openapi import Skipped
    from amends_toolkit.runtime import ToolSource

__all__ = ("Built", "build_source", "source_from_argument")

MAX_CONNECTIONS = 1024
"""Connections a source's client may hold at once: a gateway runs many calls concurrently."""


class Built:
    """A source and what the operator should know of it (the operations an OpenAPI skipped)."""

    def __init__(self, source: ToolSource, skipped: tuple[Skipped, ...] = ()) -> None:
        self.source = source
        self.skipped = skipped


class _Timed(TypedDict, total=False):
    """A source's ``timeout`` when its table gives one; else the source's own default."""

    timeout: float


async def build_source(
    config: SourceConfig,
    stack: AsyncExitStack,
    *,
    on_list_changed: Callable[[], None] | None = None,
) -> Built:
    """The source of one ``[[sources]]`` table; its client is closed when ``stack`` closes.

    Raises:
        ConfigError: a header's variable is not set, or the OpenAPI document cannot be read.
    """
    timed: _Timed = {} if config.timeout is None else {"timeout": config.timeout}
    if config.kind == "stdio":
        env = None
        if config.env is not None:
            env = {key: _expand_env(config, value) for key, value in config.env.items()}
        return Built(
            mcp.stdio(
                name=config.name,
                command=config.target,
                args=config.args,
                env=env,
                cwd=config.cwd,
                **timed,
                on_list_changed=on_list_changed,
            )
        )
    headers: dict[str, str] = {}
    for header, template in config.headers.items():
        try:
            headers[header] = expand_header(template)
        except KeyError as missing:
            raise ConfigError(
                f"source {config.name!r}: header {header!r} needs the environment variable "
                f"{missing.args[0]}, which is not set"
            ) from None
    auth = None
    if config.auth == "oauth":
        from amends_toolkit.cli._oauth import FileTokenStorage, loopback_handlers, oauth_provider

        assert config.token_file is not None  # checked when the configuration was read
        redirect, callback = loopback_handlers(config.redirect_uri)
        auth = oauth_provider(
            server_url=config.target,
            storage=FileTokenStorage(config.token_file),
            redirect_uri=config.redirect_uri,
            redirect_handler=redirect,
            callback_handler=callback,
        )
    client = await stack.enter_async_context(
        httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            limits=httpx2.Limits(
                max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS
            ),
        )
    )
    if config.kind == "mcp":
        return Built(
            mcp.http(
                name=config.name,
                url=config.target,
                client=client,
                **timed,
                on_list_changed=on_list_changed,
            )
        )
    try:
        document = openapi.read_document(config.target)
        read = openapi.read_operations(document)
    except OSError as error:
        raise ConfigError(
            f"source {config.name!r}: cannot read {config.target} ({error.strerror})"
        ) from None
    except openapi.DocumentError as error:
        raise ConfigError(f"source {config.name!r}: {config.target}: {error}") from None
    assert config.base_url is not None  # checked when the configuration was read
    return Built(
        http.make(
            name=config.name,
            base_url=config.base_url,
            operations=read.operations,
            client=client,
            propagate_trace=config.propagate_trace,
            **timed,
        ),
        skipped=read.skipped,
    )


def _expand_env(config: SourceConfig, value: str) -> str:
    if value.startswith("${") and value.endswith("}"):
        var = value[2:-1]
        if var not in os.environ:
            raise ConfigError(
                f"source {config.name!r}: env needs the environment variable {var}, which is not set"
            )
        return os.environ[var]
    return value


def source_from_argument(
    target: list[str], *, name: str, headers: dict[str, str], base_url: str | None
) -> SourceConfig:
    """A source named on the command line: an MCP URL, an OpenAPI file, or ``-- command ...``.

    ``headers`` maps a header to its template (``${VAR}``), as in the configuration.

    Raises:
        ConfigError: the argument is none of these.
    """
    if not target:
        raise ConfigError("name a source: an MCP URL, an OpenAPI file, or -- a stdio command")
    first = target[0]
    if len(target) > 1 or first == "--":
        command = target[1:] if first == "--" else target
        if not command:
            raise ConfigError("give the stdio server's command after --")
        return SourceConfig(name=name, kind="stdio", target=command[0], args=tuple(command[1:]))
    if first.startswith(("http://", "https://")):
        return SourceConfig(name=name, kind="mcp", target=first, headers=headers)
    if Path(first).is_file():
        return SourceConfig(
            name=name,
            kind="openapi",
            target=first,
            base_url=base_url or "http://127.0.0.1",
            headers=headers,
        )
    raise ConfigError(
        f"{first!r} is no http(s) URL and no file; for a stdio server write: -- COMMAND ARGS..."
    )
