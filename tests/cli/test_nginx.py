"""Two gateway processes behind a real nginx (Debian's package) on loopback, with the config in
``deploy/nginx/``: the official SDK client calls through it in both eras, every call answered,
sessions kept on their replica by ``hash $http_mcp_session_id``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from conformance._servers import closed_port, serve

from .gateway import GatewayProcess
from .test_gateway import text
from .upstream import tasks_app

pytestmark = pytest.mark.anyio

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "amends-toolkit.conf"
FOUND = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
if FOUND is None:
    pytest.skip(
        "nginx is not installed (apt-get install -y nginx; .ci/run installs it)",
        allow_module_level=True,
    )
NGINX: str = FOUND


@contextmanager
def nginx_front(directory: Path, ports: list[int]) -> Iterator[str]:
    """nginx with ``deploy/nginx/``'s config in front of two gateways (by their ports), until
    its ``/healthz`` answers 200: the MCP endpoint's URL through it."""
    front = closed_port()
    conf = (
        DEPLOY.read_text()
        .replace("127.0.0.1:8765", f"127.0.0.1:{front}")
        .replace("127.0.0.1:8766", f"127.0.0.1:{ports[0]}")
        .replace("127.0.0.1:8767", f"127.0.0.1:{ports[1]}")
        .replace("/tmp/amends-nginx", str(directory))
        .replace("worker_processes auto", "worker_processes 1")
    )
    (directory / "nginx.conf").write_text(conf)
    nginx = subprocess.Popen(
        [NGINX, "-e", "stderr", "-p", str(directory), "-c", str(directory / "nginx.conf"),
         "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        with httpx.Client() as http:
            for _ in range(1500):  # up to 30 s on a loaded machine
                try:
                    if http.get(f"http://127.0.0.1:{front}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if nginx.poll() is not None:
                    assert nginx.stderr is not None
                    raise AssertionError(nginx.stderr.read().decode())
                anyio.run(anyio.sleep, 0.02)
        yield f"http://127.0.0.1:{front}/mcp"
    finally:
        nginx.terminate()
        nginx.wait(10)
        assert nginx.stderr is not None
        nginx.stderr.close()


def port_of(gateway: GatewayProcess) -> int:
    return int(gateway.wait_ready().rsplit(":", 1)[1].split("/")[0])


@pytest.fixture(scope="module")
def balancer(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, list[GatewayProcess]]]:
    directory = tmp_path_factory.mktemp("nginx")
    with serve(tasks_app()) as tasks_port:
        gateways = []
        for replica in (1, 2):
            config = directory / f"gateway-{replica}.toml"
            config.write_text(
                f'[[sources]]\nname = "tasks"\nmcp = "http://127.0.0.1:{tasks_port}/mcp"\n'
                '[policy]\nallow = ["tasks__*"]\n'
                f"[serve]\nreplica = {replica}\nreplicas = 2\n"
                '[auth]\ntype = "none"\n'
            )
            gateways.append(GatewayProcess(config))
        try:
            with nginx_front(directory, [port_of(g) for g in gateways]) as url:
                yield url, gateways
        finally:
            for gateway in gateways:
                gateway.stop()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_every_call_through_nginx_is_answered_by_both_replicas(
    balancer: tuple[str, list[GatewayProcess]], mode: str
) -> None:
    url, gateways = balancer
    era = "session" if mode == "legacy" else "stateless"
    before = [len([e for e in g.events("gateway.call") if e["era"] == era]) for g in gateways]
    answers: list[str] = []

    async def client() -> None:
        async with Client(url, mode=mode, cache=None) as sdk:
            for _ in range(5):
                listed = await sdk.list_tools()
                assert "tasks__list_tasks" in {tool.name for tool in listed.tools}
                result = await sdk.call_tool("tasks__list_tasks", {})
                assert not result.is_error, text(result)
                answers.append(text(result))

    async with anyio.create_task_group() as tasks:
        for _ in range(8):
            tasks.start_soon(client)
    assert len(answers) == 40
    assert set(answers) == {'{"result": ["water the plants", "buy bread"]}'}
    with anyio.fail_after(30):  # the replicas' logs are read as they are written
        while True:
            after = [
                len([e for e in g.events("gateway.call") if e["era"] == era]) for g in gateways
            ]
            if sum(after) - sum(before) == 40:
                break
            await anyio.sleep(0.05)
    # Both replicas served: the balancer spread the clients (sessions by their ids).
    assert all(a > b for a, b in zip(after, before, strict=True))
