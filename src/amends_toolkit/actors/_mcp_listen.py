"""An MCP source's ear for ``notifications/tools/list_changed``, over Streamable HTTP.

While its actor runs, a source given ``on_list_changed`` holds one stream of the server's
notifications open: ``subscriptions/listen`` (asking for ``toolsListChanged``) in 2026-07-28, a
session's standalone GET stream otherwise. Each ``notifications/tools/list_changed`` is relayed
to the host, which discovers again. A stream that ends or breaks is opened again after a wait
that doubles up to the source's ``listen_retry_max`` (from ``listen_retry``); a server that offers
no stream is not asked again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import anyio

from amends_toolkit._errors import ToolSourceError
from amends_toolkit._log import get_logger
from amends_toolkit.protocols.mcp._http import ListenRefused, StreamEnded, Unreachable
from amends_toolkit.protocols.mcp._jsonrpc import ProtocolError, modern_meta, request

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from amends_toolkit._json import JsonObject

__all__ = ("LISTEN_RETRY_MAX", "LISTEN_RETRY_MIN", "LIST_CHANGED", "relay_list_changed")

_log = get_logger(__name__)

LIST_CHANGED: Final = "notifications/tools/list_changed"
LISTEN_RETRY_MIN: Final = 1.0
"""The default ``listen_retry``: seconds before a stream that ended is opened again (a server
that ends it at once is not asked in a loop)."""
LISTEN_RETRY_MAX: Final = 60.0
"""The default ``listen_retry_max``: the longest wait before opening a stream again after
failures."""


async def relay_list_changed(
    name: str,
    listen_once: Callable[[Callable[[str], None]], Awaitable[None]],
    on_list_changed: Callable[[], None],
    *,
    retry: float = LISTEN_RETRY_MIN,
    retry_max: float = LISTEN_RETRY_MAX,
) -> None:
    """Listen until cancelled, calling ``on_list_changed`` for each list_changed notification.

    ``listen_once`` (the source's, given so this module needs no source's) holds one stream
    open until it ends, handing each notification's method to the function it is given. A
    stream that ended is opened again after ``retry`` seconds, one that failed after twice the
    last wait, at most ``retry_max``; ``name`` is the source's, for the log.
    """

    def notified(method: str) -> None:
        if method == LIST_CHANGED:
            _log.info("mcp.tools_changed", source=name)
            on_list_changed()

    delay = retry
    while True:
        try:
            await listen_once(notified)
            delay = retry
        except ListenRefused as refused:
            _log.info("mcp.listen_refused", source=name, answer=str(refused))
            return
        except (ToolSourceError, Unreachable, StreamEnded, ProtocolError) as error:
            _log.info("mcp.listen_failed", source=name, error=str(error))
            delay = min(delay * 2, retry_max)
        await anyio.sleep(delay)


def listen_request(id_: int) -> JsonObject:
    """The 2026-07-28 request whose answer is a stream of tools/list_changed notifications."""
    return request(
        id_,
        "subscriptions/listen",
        {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
    )
