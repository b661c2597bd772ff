"""The credential store in a real Redis (Debian's ``redis-server``): the same Protocol as the
SQLite store, shared by two gateways' stores as by two replicas; sealed, and unreadable
without its key."""

from __future__ import annotations

from typing import cast

import pytest
import redis

from amends_toolkit.cli._credentials import KEY_VARIABLE, StoreError, new_key, open_store

from .test_limits_redis import redis_url

pytestmark = pytest.mark.anyio

__all__ = ("redis_url",)  # the fixture, used by name

SECRET = "glpat-0123456789abcdefghij"


async def test_two_replicas_share_one_store_and_it_is_sealed(redis_url: str) -> None:
    key = {KEY_VARIABLE: new_key()}
    redis.Redis.from_url(redis_url).flushdb()
    first, second = await open_store(redis_url, key), await open_store(redis_url, key)
    await first.put("key:alice", "gitlab", "token", SECRET)
    assert await second.values("key:alice", "gitlab") == {"token": SECRET}
    assert await second.values("key:bob", "gitlab") == {}
    assert await second.entries() == [("key:alice", "gitlab", "token")]
    raw = redis.Redis.from_url(redis_url)
    hashes = [name for name in cast("list[bytes]", raw.keys("*")) if raw.type(name) == b"hash"]
    dumped = b"".join(
        value for name in hashes for value in cast("list[bytes]", raw.hvals(name.decode()))
    )
    assert dumped
    assert SECRET.encode() not in dumped
    with pytest.raises(StoreError, match="sealed with another key"):
        await open_store(redis_url, {KEY_VARIABLE: new_key()})
    assert await second.delete("key:alice") == 1
    assert await first.values("key:alice", "gitlab") == {}
    assert await first.entries() == []
    await first.aclose()
    await second.aclose()


async def test_a_hash_moved_to_another_caller_opens_for_no_one(redis_url: str) -> None:
    key = {KEY_VARIABLE: new_key()}
    redis.Redis.from_url(redis_url).flushdb()
    store = await open_store(redis_url, key)
    await store.put("key:alice", "gitlab", "token", SECRET)
    raw = redis.Redis.from_url(redis_url)
    raw.rename(
        'amends:credentials:["key:alice", "gitlab"]', 'amends:credentials:["key:eve", "gitlab"]'
    )
    assert await store.values("key:eve", "gitlab") == {}
    await store.aclose()
