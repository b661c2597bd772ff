"""``at.http.Connections``: many tenants over one pool, against a real app under uvicorn on
127.0.0.1, with httpx and httpx2: each tenant's credentials reach only its own requests and are
redacted from its answers, and one tenant's flood leaves connections to the others."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator, Iterator
from typing import Literal

import anyio
import attrs
import httpx
import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import amends_toolkit as at

pytestmark = pytest.mark.anyio

Kind = Literal["httpx", "httpx2"]
TOKEN_A = "Bearer token-of-tenant-a-7f3c91"
KEY_B = "key-of-tenant-b-52e8d0"


@attrs.define
class Seen:
    tenant: str
    authorization: str | None
    key: str | None
    port: int


class Upstream:
    """The app's record of what reached it, and the gate its slow calls wait at."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.gate: asyncio.Event | None = None
        self.slow = 0  # slow calls of tenant a at the app now
        self.most_slow = 0
        self.arrived = threading.Event()  # as many slow calls as `expect` are at the app
        self.expect = 0

    def release(self) -> None:
        assert self.loop is not None
        assert self.gate is not None
        self.loop.call_soon_threadsafe(self.gate.set)

    def app(self) -> Starlette:
        async def whoami(request: Request) -> JSONResponse:
            tenant = request.query_params.get("tenant", "")
            client = request.scope["client"]
            seen = Seen(
                tenant=tenant,
                authorization=request.headers.get("authorization"),
                key=request.headers.get("x-api-key"),
                port=client[1] if client else 0,
            )
            self.seen.append(seen)
            # It echoes what it was sent, as an API's error or debug answer may.
            return JSONResponse({"tenant": tenant, "heard": [seen.authorization, seen.key]})

        async def slow(request: Request) -> JSONResponse:
            if self.gate is None:
                self.loop, self.gate = asyncio.get_running_loop(), asyncio.Event()
            self.slow += 1
            self.most_slow = max(self.most_slow, self.slow)
            if self.slow >= self.expect:
                self.arrived.set()
            try:
                await self.gate.wait()
            finally:
                self.slow -= 1
            return JSONResponse({"slow": True})

        return Starlette(
            routes=[
                Route("/whoami", whoami),
                Route("/slow", slow),
            ]
        )


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    """The app under uvicorn on 127.0.0.1:0, for one test (its gate is the test's)."""
    api = Upstream()
    config = uvicorn.Config(
        api.app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    # uvicorn offers no callback for "listening"; its flag is the documented way to wait.
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield api, f"http://127.0.0.1:{port}"
    if api.gate is not None:
        api.release()
    server.should_exit = True
    thread.join(10)


def operation(name: str, path: str) -> at.http.Operation:
    return at.http.Operation(
        definition=at.ToolDefinition(
            name=name,
            description=name,
            input_schema={"type": "object", "properties": {"tenant": {"type": "string"}}},
        ),
        request=at.http.RequestTemplate(
            method="GET",
            path=path,
            params={"tenant": at.http.Param(location="query", name="tenant")},
        ),
    )


OPERATIONS = [operation("whoami", "/whoami"), operation("slow", "/slow")]


def connections(
    kind: Kind, *, max_connections: int = at.http.MAX_CONNECTIONS, max_per_tenant: int = 64
) -> at.http.Connections[httpx.AsyncClient] | at.http.Connections[httpx2.AsyncClient]:
    if kind == "httpx":
        return at.http.Connections(max_connections=max_connections, max_per_tenant=max_per_tenant)
    limits = httpx2.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    return at.http.Connections(
        httpx2.AsyncHTTPTransport(limits=limits), max_per_tenant=max_per_tenant
    )


class KeyAuth(httpx.Auth):
    """Tenant b's credential, put on each request by its client's auth (as an OAuth provider's
    token is), not among the client's headers."""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["X-Api-Key"] = KEY_B
        yield request


class KeyAuth2(httpx2.Auth):
    def auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["X-Api-Key"] = KEY_B
        yield request


@pytest.mark.parametrize("kind", ["httpx", "httpx2"])
async def test_a_tenants_credentials_reach_only_its_requests_and_are_redacted_from_its_answers(
    kind: Kind, upstream: tuple[Upstream, str]
) -> None:
    api, base = upstream
    async with connections(kind) as pool, at.Runtime() as runtime:
        a = await runtime.spawn(
            at.http.make(
                name="a",
                base_url=base,
                operations=OPERATIONS,
                client=pool.client(headers={"Authorization": TOKEN_A}),
            )
        )
        b = await runtime.spawn(
            at.http.make(
                name="b",
                base_url=base,
                operations=OPERATIONS,
                client=pool.client(auth=KeyAuth() if kind == "httpx" else KeyAuth2()),
            )
        )
        # One after the other: the second tenant's request takes the connection the first's
        # left idle in the shared pool.
        answers = [await ref.call("whoami", {"tenant": ref.name}) for ref in (a, b, a, b, a, b)]

        async def call(ref: at.ActorRef) -> None:
            answers.append(await ref.call("whoami", {"tenant": ref.name}))

        async with anyio.create_task_group() as tasks:
            for _ in range(20):
                tasks.start_soon(call, a)
                tasks.start_soon(call, b)
    assert len(api.seen) == len(answers) == 46
    for seen in api.seen:
        if seen.tenant == "a":
            assert (seen.authorization, seen.key) == (TOKEN_A, None)
        else:
            assert (seen.tenant, seen.authorization, seen.key) == ("b", None, KEY_B)
    for answer in answers:
        assert isinstance(answer, dict)
        heard = ["[redacted]", None] if answer["tenant"] == "a" else [None, "[redacted]"]
        assert answer["heard"] == heard
    ports = {tenant: {s.port for s in api.seen if s.tenant == tenant} for tenant in "ab"}
    assert ports["a"] & ports["b"], "the tenants' requests shared no connection"


@pytest.mark.parametrize("kind", ["httpx", "httpx2"])
async def test_one_tenants_64_slow_calls_do_not_delay_another_tenants_call_on_that_host(
    kind: Kind, upstream: tuple[Upstream, str]
) -> None:
    api, base = upstream
    share = 8
    api.expect = share
    async with connections(kind, max_connections=16, max_per_tenant=share) as pool:
        flooding = pool.client(headers={"Authorization": TOKEN_A})
        # Its calls past its share wait for it (not for the pool) until the test lets them go.
        flooding.timeout = type(flooding.timeout)(5.0, pool=60.0)
        async with at.Runtime() as runtime:
            a = await runtime.spawn(
                at.http.make(
                    name="a", base_url=base, operations=OPERATIONS, client=flooding, timeout=60
                ),
                max_concurrency=64,
            )
            b = await runtime.spawn(
                at.http.make(
                    name="b",
                    base_url=base,
                    operations=OPERATIONS,
                    client=pool.client(auth=KeyAuth() if kind == "httpx" else KeyAuth2()),
                )
            )
            slow: list[at.JsonValue] = []

            async def flood() -> None:
                slow.append(await a.call("slow", {"tenant": "a"}))

            async with anyio.create_task_group() as tasks:
                for _ in range(64):
                    tasks.start_soon(flood)
                await anyio.to_thread.run_sync(api.arrived.wait)
                # Every connection the flood may take is held at the app: b's call still runs,
                # on a connection of the pool a's share left (the pool's timeout, 5 seconds,
                # would end it as UnavailableError were every connection a's).
                assert await b.call("whoami", {"tenant": "b"}) == {
                    "tenant": "b",
                    "heard": [None, "[redacted]"],
                }
                assert slow == []
                api.release()
    assert slow == [{"slow": True}] * 64
    assert api.most_slow == share


@pytest.mark.parametrize("kind", ["httpx", "httpx2"])
async def test_a_request_past_its_tenants_share_waits_no_longer_than_the_pool_timeout(
    kind: Kind, upstream: tuple[Upstream, str]
) -> None:
    api, base = upstream
    api.expect = 1
    async with connections(kind, max_connections=4, max_per_tenant=1) as pool:
        client = pool.client(headers={"Authorization": TOKEN_A})
        client.timeout = type(client.timeout)(30.0, pool=0.05)
        async with at.Runtime() as runtime:
            a = await runtime.spawn(
                at.http.make(name="a", base_url=base, operations=OPERATIONS, client=client)
            )
            async with anyio.create_task_group() as tasks:
                slow: at.JsonObject = {"tenant": "a"}
                tasks.start_soon(a.call, "slow", slow)
                await anyio.to_thread.run_sync(api.arrived.wait)
                # Its share is held by the slow call, which the app holds until released.
                with pytest.raises(at.UnavailableError, match="PoolTimeout"):
                    await a.call("whoami", {"tenant": "a"})
                api.release()
    assert [seen.tenant for seen in api.seen] == []


async def test_closing_a_tenants_client_leaves_the_pool_open(
    upstream: tuple[Upstream, str],
) -> None:
    api, base = upstream
    async with at.http.Connections() as pool:
        async with pool.client(headers={"Authorization": TOKEN_A}) as gone:
            assert (await gone.get(f"{base}/whoami")).status_code == 200
        kept = pool.client(auth=KeyAuth())
        assert (await kept.get(f"{base}/whoami")).json()["heard"] == [None, KEY_B]
    assert api.seen[0].port == api.seen[1].port


def test_connections_refuse_a_bad_option_naming_it() -> None:
    with pytest.raises(ValueError, match="max_per_tenant must be a positive whole number"):
        at.http.Connections(max_per_tenant=0)
    with pytest.raises(ValueError, match=r"max_per_tenant \(16\) must be below max_connections"):
        at.http.Connections(max_connections=16, max_per_tenant=16)
    with pytest.raises(ValueError, match="give the transport its own limits"):
        at.http.Connections(httpx.AsyncHTTPTransport(), max_connections=10)
    with pytest.raises(TypeError, match="httpx or httpx2 AsyncBaseTransport"):
        at.http.Connections(object())  # type: ignore[call-overload]
