"""MCP's OAuth flow for a remote MCP source, through the official SDK's OAuth provider.

The provider (:class:`mcp.client.auth.OAuthClientProvider`) is an ``httpx2`` auth given to the
source's client, so the credentials stay the client's: the source never sees a token. It finds
the authorization server from the MCP server's 401 (protected resource metadata), registers a
client (or uses the one it stored, or a client metadata document), runs the authorization code
flow with PKCE, and refreshes tokens. Tokens and the registered client are kept in a file the
operator names (:class:`FileTokenStorage`, mode 0600).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import tempfile
from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import SocketAttribute
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from anyio.abc import SocketListener, SocketStream, TaskStatus

__all__ = (
    "FileTokenStorage",
    "LoopbackCallback",
    "MemoryTokenStorage",
    "client_metadata",
    "loopback_handlers",
    "oauth_provider",
)

MAX_CALLBACK_REQUEST = 16_384
"""The most bytes of a request's head the callback listener reads (past it: 431)."""
CALLBACK_READ_TIMEOUT = 10.0
"""The longest one connection to the callback listener may take to send its request (seconds)."""
MAX_CALLBACK_CONNECTIONS = 16
"""Connections the callback listener answers at once; more wait in the listen backlog."""


class MemoryTokenStorage:
    """Tokens held in memory only (the conformance client's; a gateway keeps them in a file)."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info


class FileTokenStorage:
    """The SDK's ``TokenStorage`` over one JSON file, written whole (0600) at each change.

    Each change is written to a fresh file of its own (0600, made where no file was) in the
    same directory, then renamed over the token file, so no other file's mode or contents are
    taken over. A symbolic link at ``path`` is refused, read or written, as is a directory that
    others may write (and so swap the file) without its sticky bit.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, object]:
        try:
            # O_NONBLOCK: a FIFO put at the path opens at once, and is refused below.
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise self._unusable(error) from None
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise ValueError(f"the token file {self.path} is not a regular file")
            with os.fdopen(descriptor, encoding="utf-8", closefd=False) as file:
                data = json.loads(file.read())
        except (OSError, UnicodeError, json.JSONDecodeError) as error:
            raise self._unusable(error) from None
        finally:
            os.close(descriptor)
        return data if isinstance(data, dict) else {}

    def _unusable(self, error: Exception) -> ValueError:
        if isinstance(error, OSError) and error.errno == errno.ELOOP:
            return ValueError(
                f"the token file {self.path} is a symbolic link: name the file itself"
            )
        return ValueError(f"the token file {self.path} cannot be read: {error}")

    def _write(self, key: str, value: object) -> None:
        data = self._read()
        data[key] = value
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = directory.stat().st_mode
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            raise ValueError(
                f"the token file's directory {directory} may be written by anyone: "
                "keep the token file in a directory only its owner writes"
            )
        # mkstemp: O_CREAT | O_EXCL (so never a file or link already there), mode 0600.
        descriptor, fresh = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".new", dir=directory
        )
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(data, file)
            # rename(2) replaces a link put at the path since the read, never its target.
            os.replace(fresh, self.path)
        except BaseException:
            os.unlink(fresh)
            raise

    async def get_tokens(self) -> OAuthToken | None:
        value = self._read().get("tokens")
        return OAuthToken.model_validate(value) if isinstance(value, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        value = self._read().get("client")
        return OAuthClientInformationFull.model_validate(value) if isinstance(value, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


def client_metadata(client_name: str, redirect_uri: str) -> OAuthClientMetadata:
    """What the toolkit registers as with an authorization server: a client of the
    authorization-code flow, with refresh, redirected to ``redirect_uri``."""
    return OAuthClientMetadata(
        client_name=client_name,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )


def oauth_provider(
    *,
    server_url: str,
    storage: MemoryTokenStorage | FileTokenStorage,
    redirect_uri: str,
    redirect_handler: Callable[[str], Awaitable[None]],
    callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
    client_name: str = "amends-toolkit",
    client_metadata_url: str | None = None,
) -> OAuthClientProvider:
    """The SDK's OAuth provider for one MCP server: give it as ``auth=`` to an httpx2 client."""
    return OAuthClientProvider(
        server_url=server_url,
        client_metadata=client_metadata(client_name, redirect_uri),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )


def loopback_handlers(
    redirect_uri: str,
) -> tuple[Callable[[str], Awaitable[None]], LoopbackCallback]:
    """A person's browser flow: print the authorization URL, then take the redirect on loopback."""

    async def redirect(url: str) -> None:
        print(f"Open this address to authorize the gateway:\n  {url}", file=sys.stderr)

    return redirect, LoopbackCallback(redirect_uri)


class LoopbackCallback:
    """The SDK's ``callback_handler``: takes the browser's redirect on 127.0.0.1.

    It listens on the redirect URI's port and answers each connection in a task of its own,
    so a connection that idles, closes, or sends something else keeps nobody waiting: it gets
    an answer (400, 404, 431) or is closed, and the listener waits on for a ``GET`` of the
    redirect URI's path with a ``code`` in its query, whose ``code``, ``state`` and ``iss`` it
    returns. It waits as long as its caller lets it (a person may take minutes); cancelling
    the call closes the listener and every connection.

    Args:
        redirect_uri: The ``redirect_uri`` the client registered (``http://127.0.0.1:PORT/PATH``).
        read_timeout: The longest one connection may take to send its request and read the
            answer; then it is closed.
        max_connections: Connections answered at once; past it, a connection waits in the
            listen backlog for one to end.
    """

    def __init__(
        self,
        redirect_uri: str,
        *,
        read_timeout: float = CALLBACK_READ_TIMEOUT,
        max_connections: int = MAX_CALLBACK_CONNECTIONS,
    ) -> None:
        parts = urlsplit(redirect_uri)
        self.port = 80 if parts.port is None else parts.port
        self.path = parts.path or "/"
        self.read_timeout = read_timeout
        self.max_connections = max_connections

    async def __call__(self) -> AuthorizationCodeResult:
        return await self.receive()

    async def receive(
        self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> AuthorizationCodeResult:
        """Listen until the redirect comes; ``task_status`` gets the port, once listening."""
        found: list[AuthorizationCodeResult] = []
        done = anyio.Event()
        free = anyio.Semaphore(self.max_connections)
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        async with listener, anyio.create_task_group() as tasks:
            socket_listener = cast("SocketListener", listener.listeners[0])
            task_status.started(socket_listener.extra(SocketAttribute.local_port))

            async def accept() -> None:
                while True:
                    await free.acquire()
                    stream = await socket_listener.accept()
                    tasks.start_soon(self._answer, stream, free, found, done)

            tasks.start_soon(accept)
            await done.wait()
            tasks.cancel_scope.cancel()
        return found[0]

    async def _answer(
        self,
        stream: SocketStream,
        free: anyio.Semaphore,
        found: list[AuthorizationCodeResult],
        done: anyio.Event,
    ) -> None:
        result = None
        try:
            async with stream:
                with anyio.move_on_after(self.read_timeout):
                    head = await _read_head(stream)
                    status, result = (431, None) if head is None else self._read(head)
                    await stream.send(_ANSWERS[status])
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass  # it ended before its request or its answer: the listener waits on
        finally:
            free.release()
        if result is not None:
            found.append(result)
            done.set()

    def _read(self, head: bytes) -> tuple[int, AuthorizationCodeResult | None]:
        line = head.split(b"\r\n", 1)[0].split(b" ")
        if len(line) != 3 or line[0] != b"GET" or not line[2].startswith(b"HTTP/"):
            return 400, None
        target = urlsplit(line[1].decode("latin-1"))
        if target.path != self.path:
            return 404, None
        query = parse_qs(target.query)
        code = query.get("code", [None])[0]
        if not code:
            return 400, None
        state, iss = query.get("state", [None])[0], query.get("iss", [None])[0]
        return 200, AuthorizationCodeResult(code=code, state=state, iss=iss)


async def _read_head(stream: SocketStream) -> bytes | None:
    """A request's head, through its blank line; ``None`` past ``MAX_CALLBACK_REQUEST``."""
    head = bytearray()
    while True:
        searched = max(0, len(head) - 3)
        head += await stream.receive(MAX_CALLBACK_REQUEST - len(head))
        if head.find(b"\r\n\r\n", searched) >= 0:
            return bytes(head)
        if len(head) >= MAX_CALLBACK_REQUEST:
            return None


def _response(status: int, reason: str, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


_ANSWERS = {
    200: _response(200, "OK", "Authorized: you may close this page."),
    400: _response(400, "Bad Request", "This is not an authorization redirect."),
    404: _response(404, "Not Found", "Not found."),
    431: _response(431, "Request Header Fields Too Large", "The request is too large."),
}
