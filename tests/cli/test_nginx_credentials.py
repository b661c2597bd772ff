"""Two gateway replicas behind a real nginx sharing one credential store in a real Redis: the
secrets an admin sets once (into Redis) serve each caller on whichever replica answers it,
each call reaching the upstream with its caller's own token; a revocation is seen by both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import redis

from .gateway import GatewayProcess, eventually
from .test_gateway_credentials import ENV, KEYS, SEEN, TOKENS, admin, call_at, upstream_app
from .test_limits_redis import redis_url
from .test_nginx import nginx_front, port_of

pytestmark = pytest.mark.anyio

__all__ = ("redis_url",)  # the fixture, used by name


def replica_config(directory: Path, replica: int, port: int) -> Path:
    keys = ", ".join(f'{name} = "${{{name.upper()}_KEY}}"' for name in KEYS)
    path = directory / f"gateway-{replica}.toml"
    path.write_text(
        f"""
[[sources]]
name = "up"
mcp = "http://127.0.0.1:{port}/mcp"
credentials = "per-caller"
headers = {{ Authorization = "Bearer ${{caller:token}}" }}

[policy]
allow = ["up__*"]

[serve]
replica = {replica}
replicas = 2

[auth]
type = "keys"
keys = {{ {keys} }}

[credentials]
store = "${{CREDENTIALS_REDIS}}"
"""
    )
    return path


@pytest.fixture(scope="module")
def replicas(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, list[GatewayProcess]]]:
    from conformance._servers import serve

    redis.Redis.from_url(redis_url).flushdb()
    env = {**ENV, "CREDENTIALS_REDIS": redis_url}
    directory = tmp_path_factory.mktemp("replicas")
    with serve(upstream_app()) as port:
        paths = [replica_config(directory, replica, port) for replica in (1, 2)]
        for name, token in TOKENS.items():
            done = admin(paths[0], "set", f"key:{name}", "up", "token", stdin=token, env=env)
            assert done.returncode == 0, done.stderr
        gateways = [GatewayProcess(path, env=env) for path in paths]
        try:
            with nginx_front(directory, [port_of(g) for g in gateways]) as url:
                yield url, paths[0], gateways
        finally:
            for gateway in gateways:
                gateway.stop()


async def test_both_replicas_serve_each_caller_with_its_own_token_from_one_store(
    replicas: tuple[str, Path, list[GatewayProcess]],
) -> None:
    url, _, gateways = replicas
    before = [len(g.events("gateway.call")) for g in gateways]
    answers: list[tuple[str, str]] = []

    async def caller(who: str) -> None:
        for _ in range(4):
            answers.append((who, (await call_at(url, who, "up__whoami"))[0]))

    async with anyio.create_task_group() as tasks:
        for i in range(8):
            tasks.start_soon(caller, ("alice", "bob")[i % 2])
    assert len(answers) == 32
    assert all(who == answer for who, answer in answers)
    assert {token for token, method in SEEN if method == "tools/call"} <= set(TOKENS.values())
    # The replicas' logs are read as they are written.
    await eventually(
        lambda: sum(len(g.events("gateway.call")) for g in gateways) >= sum(before) + 32
    )
    after = [len(g.events("gateway.call")) for g in gateways]
    assert all(a > b for a, b in zip(after, before, strict=True))


async def test_a_revocation_is_seen_by_both_replicas(
    replicas: tuple[str, Path, list[GatewayProcess]], redis_url: str
) -> None:
    url, path, gateways = replicas
    env = {**ENV, "CREDENTIALS_REDIS": redis_url}
    assert admin(path, "revoke", "key:bob", env=env).returncode == 0
    try:
        before = [len(g.events("gateway.call")) for g in gateways]
        refused = 0
        # New sessions until both replicas have answered bob since the revocation.
        with anyio.fail_after(60):
            while True:
                answer, is_error = await call_at(url, "bob", "up__whoami")
                assert is_error, answer
                refused += 1
                now = [len(g.events("gateway.call")) for g in gateways]
                if all(a > b for a, b in zip(now, before, strict=True)):
                    break
        assert refused >= 2
        assert (await call_at(url, "alice", "up__whoami")) == ("alice", False)
    finally:
        # The module's store is shared: bob's secret is set again for the tests that run after.
        done = admin(path, "set", "key:bob", "up", "token", stdin=TOKENS["bob"], env=env)
        assert done.returncode == 0, done.stderr
