"""A per-caller source in process: each caller's calls run in that caller's own actor, made on
its first call with its stored values; the actors held are bounded, the least recently served
one stopped past the bound; a changed or deleted value makes the caller's actor anew, or
refuses the call."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import anyio
import httpx2
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit._errors import ConnectionRequired
from amends_toolkit.adapters import Caller
from amends_toolkit.cli._credentials import KEY_VARIABLE, CredentialStore, new_key, open_store
from amends_toolkit.cli._per_caller import PerCallerSource, SharedTransport, serving, tenant_client

pytestmark = pytest.mark.anyio


class Carrier:
    """A source that answers with the value it was built with (as a client carries a token)."""

    honours_cancellation = True

    def __init__(self, value: str) -> None:
        self.name = "up"
        self.value = value

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return [at.ToolDefinition(name="whoami", description="who", input_schema={})]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        return self.value


def caller(name: str) -> Caller:
    return Caller(id=f"key:{name}", name=name, kind="keys")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[CredentialStore]:
    opened = await open_store(str(tmp_path / "t.db"), {KEY_VARIABLE: new_key()})
    yield opened
    await opened.aclose()


async def test_each_caller_has_its_own_actor_and_the_held_ones_are_bounded(
    store: CredentialStore,
) -> None:
    built: list[str] = []
    clients: list[httpx2.AsyncClient] = []
    pool = SharedTransport(httpx2.AsyncHTTPTransport())

    async def build(
        who: str, values: Mapping[str, str]
    ) -> tuple[at.ToolSource, httpx2.AsyncClient]:
        built.append(who)
        client = tenant_client(pool, {"Authorization": "Bearer " + values["token"]})
        clients.append(client)
        return Carrier(values["token"]), client

    for name in ("alice", "bob", "carol"):
        await store.put(f"key:{name}", "up", "token", f"{name}-token")
    async with at.Runtime() as runtime, anyio.create_task_group() as tasks:
        source = PerCallerSource(
            name="up",
            runtime=runtime,
            values=lambda who, _: store.values(who, "up"),
            store=store,
            build=build,
            tasks=tasks,
            max_callers=2,
            spawn={},
            not_connected=lambda who: ConnectionRequired(source="up", message=f"connect {who}"),
            watched=frozenset({"token"}),
        )

        async def call(name: str) -> JsonValue:
            with serving(caller(name)):
                return await source.call("whoami", {})

        assert await call("alice") == "alice-token"
        assert await call("bob") == "bob-token"
        assert await call("alice") == "alice-token"
        assert built == ["key:alice", "key:bob"]
        assert len(runtime.children()) == 2
        # A third caller: the least recently served (bob) is let go, its client closed.
        assert await call("carol") == "carol-token"
        assert len(source) == 2
        await anyio.wait_all_tasks_blocked()
        assert len(runtime.children()) == 2
        assert clients[1].is_closed
        assert not clients[0].is_closed
        # Bob's next call makes its actor anew, with its own value.
        assert await call("bob") == "bob-token"
        assert built == ["key:alice", "key:bob", "key:carol", "key:bob"]
        # A value changed by an admin is carried from the caller's next call.
        await store.put("key:bob", "up", "token", "bob-new")
        assert await call("bob") == "bob-new"
        # Deleted: refused, and no actor is made.
        await store.delete("key:bob")
        with pytest.raises(ConnectionRequired, match="connect key:bob"):
            await call("bob")
        with pytest.raises(ConnectionRequired, match="connect key:dave"):
            await call("dave")
        # Discovery without a caller lists through a caller that has values.
        assert [d.name for d in await source.discover()] == ["whoami"]
        tasks.cancel_scope.cancel()
    await pool.transport.aclose()


@pytest.mark.virtual_clock
async def test_a_callers_actor_passivates_when_idle_and_its_next_call_starts_it_again(
    store: CredentialStore,
) -> None:
    pool = SharedTransport(httpx2.AsyncHTTPTransport())

    async def build(
        who: str, values: Mapping[str, str]
    ) -> tuple[at.ToolSource, httpx2.AsyncClient]:
        client = tenant_client(pool, {"Authorization": "Bearer " + values["token"]})
        return Carrier(values["token"]), client

    await store.put("key:alice", "up", "token", "alice-token")
    async with at.Runtime() as runtime, anyio.create_task_group() as tasks:
        source = PerCallerSource(
            name="up",
            runtime=runtime,
            values=lambda who, _: store.values(who, "up"),
            store=store,
            build=build,
            tasks=tasks,
            max_callers=2,
            spawn={"idle_timeout": 60.0},
            not_connected=lambda who: ConnectionRequired(source="up", message=f"connect {who}"),
            watched=frozenset({"token"}),
        )
        with serving(caller("alice")):
            assert await source.call("whoami", {}) == "alice-token"
            [ref] = runtime.children()
            await anyio.sleep(61)
            assert ref.statistics().state == "passivated"
            assert await source.call("whoami", {}) == "alice-token"
        assert (ref.statistics().passivations, ref.statistics().restarts) == (1, 0)
        assert runtime.children() == (ref,)
        tasks.cancel_scope.cancel()
