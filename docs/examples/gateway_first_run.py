"""A first run of the gateway: `amends-toolkit serve first_gateway.toml` as a process of its own,
and an MCP client calling it with a key."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
from anyio.streams.buffered import BufferedByteReceiveStream

import amends_toolkit as at

HERE = Path(__file__).parent


async def drain(stream: BufferedByteReceiveStream) -> None:
    """Read what the gateway still writes (its log lines), so it never waits to write them."""
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        while True:
            await stream.receive()


async def main() -> None:
    key = secrets.token_urlsafe(32)  # at least 32 characters
    # --8<-- [start:serve]
    gateway = await anyio.open_process(
        [sys.executable, "-m", "amends_toolkit", "serve", "first_gateway.toml", "--port", "0"],
        cwd=HERE,
        env={
            **os.environ,
            "ALICE_KEY": key,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        stderr=subprocess.PIPE,
    )
    assert gateway.stderr is not None
    stderr = BufferedByteReceiveStream(gateway.stderr)
    serving = None
    while serving is None:  # the gateway says where it serves once it is ready
        line = await stderr.receive_until(b"\n", 65536)
        serving = re.search(rb"serving (\d+) tools at (\S+)", line)
    print("serving", int(serving[1]), "tools")
    url = serving[2].decode()
    # --8<-- [end:serve]
    try:
        # --8<-- [start:client]
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(headers=headers) as client:
            gateway_source = at.mcp.http(name="gateway", url=url, client=client)
            async with gateway_source.lifespan():
                print([d.name for d in await gateway_source.discover()])
                print(await gateway_source.call("tasks__list_tasks", {}))
                try:
                    await gateway_source.call("tasks__delete_task", {"task_id": 1})
                except at.CallFailedError as error:
                    print(error.model_message)
        # --8<-- [end:client]
    finally:
        gateway.send_signal(signal.SIGINT)  # running calls get `grace` seconds, then it exits
        async with anyio.create_task_group() as group:
            group.start_soon(drain, stderr)
            await gateway.wait()
    print("exit status", gateway.returncode)


if __name__ == "__main__":
    anyio.run(main)
