"""Approving out of band: the gateway (gateway_approvers.toml) holds an agent's call of a tool
that needs approval until an approver, a program holding the `ops` key, decides it over
``GET /approvals`` and ``POST /approvals/{id}``. Both run here; the person is a scripted answer."""

from __future__ import annotations

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


# --8<-- [start:approver]
async def approve_the_next(gateway: str, ops_key: str) -> None:
    """Ask about the first approval this approver may decide, once one is pending."""
    headers = {"Authorization": f"Bearer {ops_key}"}
    async with httpx.AsyncClient(base_url=gateway, headers=headers, timeout=10) as http:
        while True:
            listed = await http.get("/approvals")
            listed.raise_for_status()
            for approval in listed.json()["approvals"]:
                print(f"{approval['caller']} ({approval['profile']}) asks to run")
                print(f"  {approval['tool']} {approval['input']}")
                answer = True  # input("Approve? [y/N] ") in a program
                decided = await http.post(f"/approvals/{approval['id']}", json={"approve": answer})
                print("  approved:", decided.json()["approved"])
                return
            await anyio.sleep(0.2)  # or wait for the webhook's POST


# --8<-- [end:approver]


async def main() -> None:
    keys = {"AGENT_KEY": secrets.token_urlsafe(32), "OPS_KEY": secrets.token_urlsafe(32)}
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    gateway = await anyio.open_process(
        [sys.executable, "-m", "amends_toolkit", "serve", "gateway_approvers.toml", "--port", "0"],
        cwd=HERE,
        env={**os.environ, **keys, "PATH": path},
        stderr=subprocess.PIPE,
    )
    assert gateway.stderr is not None
    stderr = BufferedByteReceiveStream(gateway.stderr)
    serving = None
    while serving is None:
        line = await stderr.receive_until(b"\n", 65536)
        serving = re.search(rb"serving \d+ tools at (\S+)", line)
    url = serving[1].decode()
    try:
        headers = {"Authorization": f"Bearer {keys['AGENT_KEY']}"}
        async with httpx.AsyncClient(headers=headers) as client, anyio.create_task_group() as group:
            group.start_soon(approve_the_next, url.removesuffix("/mcp"), keys["OPS_KEY"])
            agent = at.mcp.http(name="gateway", url=url, client=client)
            async with agent.lifespan():  # the agent's call waits until the approver decides
                print(await agent.call("tasks__delete_task", {"task_id": 1}))
    finally:
        gateway.send_signal(signal.SIGINT)
        async with anyio.create_task_group() as group:
            group.start_soon(drain, stderr)
            await gateway.wait()


async def drain(stream: BufferedByteReceiveStream) -> None:
    """Read what the gateway still writes, so it never waits to write it."""
    try:
        while True:
            await stream.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        pass


if __name__ == "__main__":
    anyio.run(main)
