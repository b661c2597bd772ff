"""The token file of an ``auth = "oauth"`` source, the provider built over it, and the loopback
listener that takes the browser's redirect (real sockets, a virtual clock)."""

from __future__ import annotations

import contextlib
import errno
import math
import os
import socket
import stat
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import httpx2
import pytest
from anyio.abc import SocketAttribute
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from amends_toolkit.cli._oauth import (
    MAX_CALLBACK_REQUEST,
    FileTokenStorage,
    LoopbackCallback,
    oauth_provider,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from anyio.abc import SocketStream, TaskStatus

pytestmark = pytest.mark.anyio


async def test_tokens_and_the_client_survive_in_a_file_only_its_owner_reads(tmp_path: Path) -> None:
    path = tmp_path / "tokens" / "remote.json"
    storage = FileTokenStorage(path)
    assert await storage.get_tokens() is None
    assert await storage.get_client_info() is None
    await storage.set_client_info(
        OAuthClientInformationFull(
            client_id="c-1", redirect_uris=[AnyUrl("http://127.0.0.1:8976/cb")]
        )
    )
    await storage.set_tokens(OAuthToken(access_token="a-1", refresh_token="r-1", expires_in=60))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = FileTokenStorage(path)
    tokens = await again.get_tokens()
    client = await again.get_client_info()
    assert tokens is not None
    assert (tokens.access_token, tokens.refresh_token) == ("a-1", "r-1")
    assert client is not None
    assert client.client_id == "c-1"


async def test_a_broken_token_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=f"the token file {path} cannot be read"):
        await FileTokenStorage(path).get_tokens()


async def test_the_provider_is_the_sdks_and_an_httpx2_auth(tmp_path: Path) -> None:
    async def redirect(url: str) -> None:
        raise AssertionError("no authorization in this test")

    async def callback() -> AuthorizationCodeResult:
        raise AssertionError("no authorization in this test")

    provider = oauth_provider(
        server_url="https://mcp.example.com/mcp",
        storage=FileTokenStorage(tmp_path / "t.json"),
        redirect_uri="http://127.0.0.1:8976/callback",
        redirect_handler=redirect,
        callback_handler=callback,
    )
    assert isinstance(provider, OAuthClientProvider)
    assert isinstance(provider, httpx2.Auth)


async def test_a_stale_new_file_lends_the_token_file_neither_its_mode_nor_its_contents(
    tmp_path: Path,
) -> None:
    path = tmp_path / "remote.json"
    stale = tmp_path / "remote.json.new"
    stale.write_text("stale")
    stale.chmod(0o644)
    await FileTokenStorage(path).set_tokens(OAuthToken(access_token="a-1"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stale.read_text() == "stale"
    assert sorted(os.listdir(tmp_path)) == ["remote.json", "remote.json.new"]


async def test_the_mode_is_0600_whatever_the_umask_and_the_old_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "remote.json"
    path.write_text("{}")
    path.chmod(0o666)
    old = os.umask(0)
    try:
        await FileTokenStorage(path).set_tokens(OAuthToken(access_token="a-1"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("linked", ["remote.json", "remote.json.new"])
async def test_a_link_at_the_token_file_or_beside_it_never_reaches_its_target(
    tmp_path: Path, linked: str
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text('{"tokens": {"access_token": "not-mine", "token_type": "Bearer"}}')
    target.chmod(0o644)
    (tmp_path / linked).symlink_to(target)
    storage = FileTokenStorage(tmp_path / "remote.json")
    if linked == "remote.json":
        with pytest.raises(ValueError, match="is a symbolic link: name the file itself"):
            await storage.get_tokens()
        with pytest.raises(ValueError, match="is a symbolic link"):
            await storage.set_tokens(OAuthToken(access_token="a-1"))
    else:
        await storage.set_tokens(OAuthToken(access_token="a-1"))
        assert not (tmp_path / "remote.json").is_symlink()
        assert stat.S_IMODE((tmp_path / "remote.json").stat().st_mode) == 0o600
    assert "not-mine" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


async def test_a_fifo_at_the_token_file_is_refused_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "remote.json"
    os.mkfifo(path)
    with pytest.raises(ValueError, match="is not a regular file"):
        await FileTokenStorage(path).get_tokens()


async def test_a_directory_anyone_may_write_is_refused_and_a_sticky_one_is_not(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ValueError, match="may be written by anyone"):
        await FileTokenStorage(shared / "remote.json").set_tokens(OAuthToken(access_token="a"))
    assert os.listdir(shared) == []
    shared.chmod(0o1777)
    await FileTokenStorage(shared / "remote.json").set_tokens(OAuthToken(access_token="a"))
    assert stat.S_IMODE((shared / "remote.json").stat().st_mode) == 0o600


async def test_a_directory_at_the_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "remote.json"
    path.mkdir()
    with pytest.raises(ValueError, match="is not a regular file"):
        await FileTokenStorage(path).set_tokens(OAuthToken(access_token="a-1"))
    assert sorted(os.listdir(tmp_path)) == ["remote.json"]


async def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "remote.json"
    storage = FileTokenStorage(path)
    await storage.set_tokens(OAuthToken(access_token="a-1"))

    def full(source: object, target: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space left"):
        await storage.set_tokens(OAuthToken(access_token="a-2"))
    monkeypatch.undo()
    tokens = await storage.get_tokens()
    assert tokens is not None
    assert tokens.access_token == "a-1"
    assert sorted(os.listdir(tmp_path)) == ["remote.json"]


REDIRECT = b"GET /callback?code=c-1&state=s-1&iss=https%3A%2F%2Fas HTTP/1.1\r\nHost: x\r\n\r\n"


@contextlib.asynccontextmanager
async def flow(
    *, read_timeout: float = math.inf, max_connections: int = 16
) -> AsyncIterator[tuple[int, list[AuthorizationCodeResult]]]:
    """A callback listening on a free port: its port, and its result once the flow ends."""
    callback = LoopbackCallback(
        "http://127.0.0.1:0/callback", read_timeout=read_timeout, max_connections=max_connections
    )
    results: list[AuthorizationCodeResult] = []

    async def run(*, task_status: TaskStatus[int]) -> None:
        results.append(await callback.receive(task_status=task_status))

    # The guard is virtual time: a listener that waits forever fails at once.
    with anyio.fail_after(3600):
        async with anyio.create_task_group() as tasks:
            yield await tasks.start(run), results


async def exchange(port: int, request: bytes) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(request)
        return await read_all(stream)


async def read_all(stream: SocketStream) -> bytes:
    answer = b""
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            answer += await stream.receive()
    return answer


@pytest.mark.virtual_clock
async def test_the_redirect_gives_its_code_state_and_issuer() -> None:
    async with flow() as (port, results):
        answer = await exchange(port, REDIRECT)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"Authorized: you may close this page.")
    assert results == [AuthorizationCodeResult(code="c-1", state="s-1", iss="https://as")]


@pytest.mark.virtual_clock
async def test_an_idle_connection_held_open_does_not_keep_the_redirect_out() -> None:
    async with flow() as (port, results), await anyio.connect_tcp("127.0.0.1", port) as idle:
        await idle.send(b"GET /callback?co")
        await anyio.wait_all_tasks_blocked()  # the listener holds it, waiting for the rest
        answer = await exchange(port, REDIRECT)
        assert answer.startswith(b"HTTP/1.1 200 OK")
        # The flow's end closes the connections still open.
        assert await read_all(idle) == b""
    assert [r.code for r in results] == ["c-1"]


@pytest.mark.virtual_clock
@pytest.mark.parametrize("sent", [b"", b"GET /callback?code=late HTTP/1.1\r\n"])
async def test_a_connection_is_closed_once_its_read_timeout_passes(sent: bytes) -> None:
    async with flow(read_timeout=10.0) as (port, results):
        async with await anyio.connect_tcp("127.0.0.1", port) as idle:
            await idle.send(sent)
            began = anyio.current_time()
            assert await read_all(idle) == b""
            assert 10.0 <= anyio.current_time() - began < 10.5
        assert results == []
        await exchange(port, REDIRECT)
    assert [r.code for r in results] == ["c-1"]


@pytest.mark.virtual_clock
@pytest.mark.parametrize("ending", ["close", "reset"])
async def test_a_connection_that_ends_before_its_request_does_not_end_the_flow(
    ending: str,
) -> None:
    async with flow() as (port, results):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        if ending == "reset":
            raw = stream.extra(SocketAttribute.raw_socket)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await stream.send(b"GET /callback?code=")
        await stream.aclose()
        await anyio.wait_all_tasks_blocked()
        assert results == []
        assert (await exchange(port, REDIRECT)).startswith(b"HTTP/1.1 200 OK")
    assert [r.code for r in results] == ["c-1"]


@pytest.mark.virtual_clock
@pytest.mark.parametrize(
    ("request_", "status"),
    [
        (b"\x00\xff\x16\x03\x01 garbage\r\n\r\n", b"400 Bad Request"),
        (b"\r\n\r\n", b"400 Bad Request"),
        (b"GET /callback?code=c-2\r\n\r\n", b"400 Bad Request"),
        (b"POST /callback?code=c-2&state=s HTTP/1.1\r\n\r\n", b"400 Bad Request"),
        (b"GET /callback?state=s-1 HTTP/1.1\r\n\r\n", b"400 Bad Request"),
        (b"GET /callback?code= HTTP/1.1\r\n\r\n", b"400 Bad Request"),
        (b"GET /favicon.ico HTTP/1.1\r\n\r\n", b"404 Not Found"),
        (b"GET /other?code=c-2&state=s HTTP/1.1\r\n\r\n", b"404 Not Found"),
        (b"GET /callback?code=" + b"c" * MAX_CALLBACK_REQUEST, b"431 Request Header"),
    ],
)
async def test_what_is_not_the_redirect_is_answered_and_the_flow_waits_on(
    request_: bytes, status: bytes
) -> None:
    async with flow() as (port, results):
        answer = await exchange(port, request_[:MAX_CALLBACK_REQUEST])
        assert answer.startswith(b"HTTP/1.1 " + status)
        assert b"Connection: close" in answer
        assert results == []
        await exchange(port, REDIRECT)
    assert [r.code for r in results] == ["c-1"]


@pytest.mark.virtual_clock
async def test_connections_past_the_cap_wait_in_the_backlog_for_one_to_end() -> None:
    answers: list[bytes] = []
    async with flow(max_connections=1) as (port, results):
        idle = await anyio.connect_tcp("127.0.0.1", port)
        await anyio.wait_all_tasks_blocked()

        async def redirect() -> None:
            answers.append(await exchange(port, REDIRECT))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(redirect)
            await anyio.wait_all_tasks_blocked()
            assert (answers, results) == ([], [])
            await idle.aclose()
    assert answers[0].startswith(b"HTTP/1.1 200 OK")
    assert [r.code for r in results] == ["c-1"]
