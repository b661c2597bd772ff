"""A real gateway process against slow clients (slowloris): half-open connections past the cap,
a body sent a byte at a time, and the open-files limit the process runs under."""

from __future__ import annotations

import resource
from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketStream

from .gateway import GatewayProcess, eventually, grower_config
from .test_gateway_sessions import running, sdk_client_calls

pytestmark = pytest.mark.anyio


async def connect(gateway: GatewayProcess) -> SocketStream:
    port = httpx.URL(gateway.wait_ready()).port
    assert port is not None
    return await anyio.connect_tcp("127.0.0.1", port)


async def closed(stream: SocketStream) -> None:
    """Return once the gateway has closed the connection (20 seconds at most)."""
    with anyio.fail_after(20):
        try:
            while True:
                await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return


async def answer(stream: SocketStream) -> bytes:
    """One whole answer's head and body (the body as long as its Content-Length)."""
    data = b""
    with anyio.fail_after(20):
        while b"\r\n\r\n" not in data:
            data += await stream.receive()
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += await stream.receive()
    return head


async def test_half_open_connections_past_the_cap_do_not_keep_a_new_client_out(
    tmp_path: Path,
) -> None:
    with running(tmp_path, max_connections=8, header_timeout=5) as gateway:
        half_open = []
        for index in range(12):
            stream = await connect(gateway)
            if index % 2:
                await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
            half_open.append(stream)
        async with httpx.AsyncClient() as http:
            # Past the cap a connection is closed at once: a client is refused, not left to wait.
            with pytest.raises(httpx.TransportError):
                await http.get(f"{gateway.base}/healthz")
        for stream in half_open:
            await closed(stream)
            await stream.aclose()
        await sdk_client_calls(gateway.wait_ready())


async def test_a_request_at_the_connection_cap_is_answered_503(tmp_path: Path) -> None:
    with running(tmp_path, max_connections=4) as gateway:
        held = [await connect(gateway) for _ in range(3)]
        async with httpx.AsyncClient() as http:
            refused = await http.get(f"{gateway.base}/healthz")
            assert (refused.status_code, refused.text) == (503, "Service Unavailable")
        for stream in held:
            await stream.aclose()

        async def served() -> bool:
            async with httpx.AsyncClient() as http:
                return (await http.get(f"{gateway.base}/healthz")).status_code == 200

        await eventually(served)


async def test_a_body_sent_too_slowly_closes_its_connection(tmp_path: Path) -> None:
    with running(tmp_path, body_timeout=1) as gateway:
        stream = await connect(gateway)
        await stream.send(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"accept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n"
            b'{"jsonrpc"'
        )
        await closed(stream)
        await stream.aclose()
        await sdk_client_calls(gateway.wait_ready())


async def test_a_keep_alive_connection_outlives_the_header_timeout(tmp_path: Path) -> None:
    with running(tmp_path, header_timeout=1) as gateway:
        port = httpx.URL(gateway.wait_ready()).port
        request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        kept = await connect(gateway)
        await kept.send(request)
        assert (await answer(kept)).startswith(b"HTTP/1.1 200")
        # A connection opened after that answer, sending nothing, is closed: the header
        # timeout has passed for the idle keep-alive connection too, and it is still served.
        late = await connect(gateway)
        await closed(late)
        await late.aclose()
        await kept.send(request)
        assert (await answer(kept)).startswith(b"HTTP/1.1 200")
        await kept.aclose()


def lower_open_files() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))


@pytest.mark.skipif(
    resource.getrlimit(resource.RLIMIT_NOFILE)[1] <= 1024, reason="the hard limit is 1024 or less"
)
async def test_the_open_files_soft_limit_is_raised_to_the_hard_limit(tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    process = GatewayProcess(grower_config(tmp_path), preexec_fn=lower_open_files)
    try:
        process.wait_ready()
        assert resource.prlimit(process.process.pid, resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        process.stop()
