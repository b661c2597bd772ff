"""The host's client, as every HTTP-speaking source takes it: what it must have
(:class:`HttpClient`), checked when a source is built, a URL it sends to again and again parsed
once into the client's own type, and its network failures described for the host. The one place
that tells ``httpx`` from ``httpx2`` (:func:`libraries`, :func:`library_of`).

A source takes an ``httpx.AsyncClient`` or an ``httpx2.AsyncClient``. A sync client (``httpx.Client``)
has the same methods but blocks, and would fail only at the first call, deep inside: it is
refused when the source is built, with the fix. A request that failed on the network is told to
the host as where it went (scheme, host, port and path: no credentials, no query) and why (a
name that does not resolve, a refused connection), which the client's own message does not say.
"""

from __future__ import annotations

import socket
import sys
from typing import TYPE_CHECKING, Final, Protocol, cast
from urllib.parse import urlsplit

from amends_toolkit.protocols._body import RawResponse

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from contextlib import AbstractAsyncContextManager
    from types import ModuleType

__all__ = (
    "HttpClient",
    "HttpResponse",
    "check_client",
    "client_url",
    "libraries",
    "library_of",
    "network_failure",
    "request_timeout",
    "where",
)

LIBRARIES: Final = ("httpx", "httpx2")
"""The client libraries whose clients a source knows by their classes (same API, two trees)."""


class HttpResponse(RawResponse, Protocol):
    """What a source reads of a response (``httpx.Response``, ``httpx2.Response``)."""

    @property
    def status_code(self) -> int: ...


class HttpClient(Protocol):
    """The host's client: an ``httpx.AsyncClient`` or an ``httpx2.AsyncClient``.

    Its ``headers`` and ``params`` (its credentials) win over any an input fills.
    """

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def params(self) -> Mapping[str, str]: ...

    def stream(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = ...,
        params: tuple[tuple[str, str], ...] | None = ...,
        headers: Sequence[tuple[str, str]] | Mapping[str, str] | None = ...,
        timeout: float | None = ...,
        extensions: Mapping[str, object] | None = ...,
    ) -> AbstractAsyncContextManager[HttpResponse]: ...


def request_timeout(client: object, seconds: float | None) -> float | None:
    """The timeout of one request a source sends: ``seconds`` (its own deadline) to connect,
    write and read, so that a client's default (httpx's 5 seconds) cannot end a call the source
    would wait for; and the client's own ``pool`` timeout to wait for a connection of its pool,
    which is the host's (a shared pool's backpressure, see ``at.http.Connections``).

    Typed as the float a client's ``stream`` takes: an httpx (or httpx2) ``Timeout`` is one.
    """
    own = getattr(client, "timeout", None)
    if own is None or not hasattr(own, "pool"):
        return seconds
    return cast("float | None", type(own)(seconds, pool=own.pool))


def libraries() -> list[ModuleType]:
    """``httpx`` and ``httpx2``, those of them the process has imported (a client of one that
    is not imported cannot exist)."""
    return [module for name in LIBRARIES if (module := sys.modules.get(name)) is not None]


def library_of(kind: type) -> str | None:
    """The client library (``"httpx"`` or ``"httpx2"``) a class of it belongs to, or ``None``."""
    library = kind.__module__.partition(".")[0]
    return library if library in LIBRARIES else None


_FIX: Final = (
    "give an httpx.AsyncClient (or an httpx2.AsyncClient), as in "
    "`async with httpx.AsyncClient(headers=...) as client:`"
)


def check_client(client: object) -> None:
    """Refuse what is not an async httpx-style client, naming the fix.

    Raises:
        TypeError: a sync ``httpx.Client`` (or ``httpx2.Client``), or no client at all.
    """
    for loaded in libraries():
        if isinstance(client, loaded.Client):
            raise TypeError(f"client is a sync {loaded.__name__}.Client, which would block: {_FIX}")
    if not callable(getattr(client, "stream", None)):
        raise TypeError(f"client must be an async HTTP client, not {type(client).__name__}: {_FIX}")


def client_url(client: object, url: str, *, name: str = "url") -> str:
    """``url`` as an ``httpx`` (or ``httpx2``) client's own ``URL``, which its requests take as
    they are, where a string is parsed anew for every request (about 20 µs with ``httpx2``, the
    IP address of a host checked each time); any other client is given the string, and so is a
    subclass with its own ``stream`` or ``build_request``, which may read the URL as the string
    a source's client protocol promises.

    Raises:
        ValueError: the client cannot parse the URL (an invalid port, a lone surrogate), which
            every request would fail on; the message names the URL by its option, ``name``.
    """
    for loaded in libraries():
        if isinstance(client, loaded.AsyncClient):
            try:
                parsed = loaded.URL(url)
            except (loaded.InvalidURL, UnicodeError) as error:  # a lone surrogate in it
                raise ValueError(f"{name} is not a URL the client can send to: {error}") from None
            if any(
                getattr(type(client), method) is not getattr(loaded.AsyncClient, method)
                for method in ("stream", "build_request")
            ):
                return url
            # Typed as the string it stands for: the client's ``stream`` takes either.
            return cast("str", parsed)
    return url


def where(url: str) -> str:
    """The URL a host may read in a message: scheme, host, port and path (no user, no query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def network_failure(method: str, url: str, error: BaseException) -> str:
    """What a host reads of a request that did not reach the server: where it went, and why."""
    return f"{method} {where(url)} failed: {type(error).__name__}: {_cause(error)}"


def _cause(error: BaseException) -> str:
    """The cause under the client's error: a name that does not resolve, a refused connection.

    The client wraps it (in its own error, an ``OSError``, an exception group of attempts).
    """
    found: list[BaseException] = []
    todo: list[BaseException] = [error]
    while todo and len(found) < 20:
        current = todo.pop()
        found.append(current)
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        todo += [e for e in getattr(current, "exceptions", ()) if isinstance(e, BaseException)]
    for cause in found:
        if isinstance(cause, socket.gaierror):
            return f"the host name could not be resolved ({cause.strerror or cause})"
    for cause in found:
        if isinstance(cause, ConnectionRefusedError):
            return "the connection was refused (nothing listens at that address)"
    return str(error) or type(error).__name__
