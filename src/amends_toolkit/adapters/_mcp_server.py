"""``at.adapters.mcp_server``: the one name of the MCP server front that needs no ``mcp`` to import.

The front itself is :mod:`amends_toolkit.adapters.mcp_front`, imported when this is called, so
``amends_toolkit.adapters`` imports without the ``mcp-server`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from amends_toolkit._extras import missing_extra
from amends_toolkit.adapters._asking import APPROVAL_STATE_TTL

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from amends_toolkit.adapters.mcp_front import Select, ToolkitServer
    from amends_toolkit.runtime import Member, Toolkit
    from amends_toolkit.runtime._session import Approve, OnError

__all__ = ("LIST_PAGE_SIZE", "MAX_SESSIONS", "SESSION_IDLE_TIMEOUT", "mcp_server")

MAX_SESSIONS: Final = 1_000
"""Sessions (of the protocol versions before 2026-07-28) a front's app keeps open at once. Past
it, an idle session is ended to make room (the one idle longest of the peer holding the most;
its id then answers 404, and its client begins another); when every session has a request in
flight, a new one is refused with 503. About 40 KB each."""
SESSION_IDLE_TIMEOUT: Final = 600.0
"""Seconds a session may go with no request in flight (no call, no open stream) before it ends."""

_SDK: Final = ("mcp", "mcp_types")
"""The modules of the official SDK, which the ``mcp-server`` extra installs."""

LIST_PAGE_SIZE: Final = 500
"""Tools in one page of ``tools/list`` (the default of ``page_size``): a client follows
``nextCursor`` for the rest, so one request costs the server this many tools' work however
large the toolkit is."""


def mcp_server(
    toolkit: Toolkit | Mapping[str, tuple[Toolkit, Iterable[Member]]],
    *,
    name: str,
    version: str = "",
    instructions: str | None = None,
    approve: Approve | None = None,
    on_error: OnError | None = None,
    timeout: float | None = None,
    members: Iterable[Member] = (),
    page_size: int = LIST_PAGE_SIZE,
    select: Select | None = None,
    approval_key: bytes | None = None,
    approval_ttl: float = APPROVAL_STATE_TTL,
) -> ToolkitServer:
    """Serve a toolkit, as assembled or presented, as an MCP server, with the host's policy.

    Args:
        toolkit: The tools to serve, under their model-facing names, with their input schemas
            exactly as the toolkit has them. A blocked tool is not in it, so no client sees it.
            Or several toolkits, by name, each with its members, of which ``select`` picks a
            caller's: a caller lists and calls the tools of its toolkit alone (another's tool is
            "Unknown tool" to it, as a blocked one is).
        name: The server's name in ``serverInfo``.
        version: The server's version in ``serverInfo``.
        instructions: What the server tells a client about its tools, if anything.
        approve: Asked before each call of a tool that needs approval, as
            :class:`~amends_toolkit.Session` asks it; a refusal is an ``ApprovalDenied``
            failure and the tool does not run; :func:`~amends_toolkit.adapters.ask_client` asks
            the client that called, and an ``approve`` that got no decision raises
            :class:`~amends_toolkit.NoApproval`. Without it (a server cannot ask a person), a tool
            that always needs approval is not served, and a call that needs approval because of
            its input (``tool_call`` of tool search) is refused as ``ApprovalDenied``.
        on_error: Shown the :class:`~amends_toolkit.ToolSourceError` behind a failure, as a
            session shows it.
        timeout: Seconds a call may run (approval not counted), as in a session; past it the
            call is an ``UnavailableError`` failure.
        members: The assembly's members, when the host wants each tool listed with its
            source's hints (``annotations``: title, read-only, destructive, idempotent, open
            world); a toolkit does not keep them. Tools of a presentation have none.
        page_size: Tools in one page of ``tools/list`` (:data:`LIST_PAGE_SIZE`); a client
            follows ``nextCursor`` for the rest, so a request costs this many tools' work
            however many the server serves.
        select: With several toolkits, the name of a caller's (see
            :data:`amends_toolkit.adapters.mcp_front.Select`): asked once per request to the
            endpoint, after the authenticator; a name no toolkit has is served no tool.
        approval_key: The key (32 bytes or more) that signs the ``requestState`` of a
            2026-07-28 approval question (see :func:`~amends_toolkit.adapters.ask_client`);
            generated when not given, so only this process takes its states back. Give the same
            key to replicas that share callers.
        approval_ttl: Seconds a client has to send such a call again with its person's answer
            (:data:`~amends_toolkit.adapters._asking.APPROVAL_STATE_TTL`: 600).

    Each call runs in its own :class:`~amends_toolkit.Session`, so it checks the input against
    the tool's schema (the SDK checks nothing), asks approval, applies the timeout and shows
    errors exactly as a harness does. An answer of MCP content blocks (an MCP tool's text,
    images, audio and resources, or an HTTP source's image, sound or PDF) is those blocks as they
    came; an answer that is a JSON object is the result's ``structuredContent`` and a text block
    of its JSON; a string is a text block as it is; any other JSON a text block of its JSON.
    A client that sends a progress token is sent the call's progress
    (``notifications/progress`` with its token) as the source reports it; the source is asked
    for progress only then (a client of the SDK's in-process transport has no token to send). A failure is ``isError: true`` with one text block, the
    failure's message (the model's text: no address, no credential). A name the server does not
    serve is the protocol error -32602 ("Unknown tool"). A call the client cancels is cancelled.

    Returns:
        The server: ``streamable_http_app()`` gives its Starlette ASGI app, ``run_stdio()``
        serves it over stdin and stdout.

    Raises:
        ModuleNotFoundError: the ``mcp`` SDK is not installed; the message names the
            ``pip install`` line of the ``mcp-server`` extra.
        TypeError: ``toolkit`` is no Toolkit (nor a mapping of them), or ``select`` is given
            with one toolkit or missing with several.
        ValueError: ``timeout`` is not a positive number of seconds, ``page_size`` is
            not a whole number from 1, ``approval_key`` is shorter than 32 bytes, or
            ``approval_ttl`` is not a positive number of seconds.
    """
    # Imported here so that amends_toolkit.adapters imports without the optional SDK.
    try:
        from amends_toolkit.adapters.mcp_front import ToolkitServer
    except ModuleNotFoundError as error:
        raise missing_extra(
            error, extra="mcp-server", modules=_SDK, needed_by="at.adapters.mcp_server"
        ) from error

    return ToolkitServer(
        toolkit,
        name=name,
        version=version,
        instructions=instructions,
        approve=approve,
        on_error=on_error,
        timeout=timeout,
        members=members,
        page_size=page_size,
        select=select,
        approval_key=approval_key,
        approval_ttl=approval_ttl,
    )
