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

    from anyio.abc import SocketListener

__all__ = ("FileTokenStorage", "MemoryTokenStorage", "loopback_handlers", "oauth_provider")

MAX_CALLBACK_REQUEST = 16_384
"""The most bytes of the browser's redirect the callback listener reads."""


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
        client_metadata=OAuthClientMetadata(
            client_name=client_name,
            redirect_uris=[AnyUrl(redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )


def loopback_handlers(
    redirect_uri: str,
) -> tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[AuthorizationCodeResult]]]:
    """A person's browser flow: print the authorization URL, then take the redirect on loopback.

    The callback listens on the redirect URI's port (127.0.0.1) for one request and reads the
    ``code``, ``state`` and ``iss`` from its query (at most 16 KiB of it).
    """
    parts = urlsplit(redirect_uri)
    port = parts.port or 80

    async def redirect(url: str) -> None:
        print(f"Open this address to authorize the gateway:\n  {url}", file=sys.stderr)

    async def callback() -> AuthorizationCodeResult:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
        async with listener:
            while True:
                socket_listener = cast("SocketListener", listener.listeners[0])
                stream = await socket_listener.accept()
                async with stream:
                    head = b""
                    while b"\r\n" not in head and len(head) < MAX_CALLBACK_REQUEST:
                        head += await stream.receive(MAX_CALLBACK_REQUEST)
                    target = head.split(b"\r\n", 1)[0].split(b" ")
                    query = (
                        parse_qs(urlsplit(target[1].decode("latin-1")).query)
                        if len(target) > 1
                        else {}
                    )
                    code = query.get("code", [None])[0]
                    body = b"Authorized: you may close this page." if code else b"No code."
                    await stream.send(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                if code:
                    return AuthorizationCodeResult(
                        code=code,
                        state=query.get("state", [None])[0],
                        iss=query.get("iss", [None])[0],
                    )

    return redirect, callback
