"""The credential store (SQLite, the default): values sealed with AES-GCM under a key from the
environment, each bound to its (caller, source, name); unreadable without the key, a row moved
to another caller opens for no one, and it survives a restart."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

import pytest

from amends_toolkit._errors import AuthenticationError, ConnectionRequired
from amends_toolkit.cli._credentials import (
    KEY_VARIABLE,
    MAX_VALUE_BYTES,
    Sealer,
    StoreError,
    new_key,
    open_store,
)

pytestmark = pytest.mark.anyio

SECRET = "ghp_" + secrets.token_urlsafe(24)


def stored_bytes(directory: Path) -> bytes:
    return b"".join(path.read_bytes() for path in directory.iterdir())


def env(key: str) -> dict[str, str]:
    return {KEY_VARIABLE: key}


async def test_a_value_is_kept_sealed_and_survives_a_restart(tmp_path: Path) -> None:
    key, path = new_key(), tmp_path / "tokens.db"
    store = await open_store(str(path), env(key))
    await store.put("key:alice", "github", "token", SECRET)
    await store.aclose()
    # Nowhere in the file (nor its write-ahead log) is the value, nor any part of it.
    stored = stored_bytes(tmp_path)
    assert SECRET.encode() not in stored
    assert SECRET[4:20].encode() not in stored
    assert path.stat().st_mode & 0o777 == 0o600

    again = await open_store(str(path), env(key))
    assert await again.values("key:alice", "github") == {"token": SECRET}
    assert await again.values("key:bob", "github") == {}
    assert await again.entries() == [("key:alice", "github", "token")]
    await again.aclose()


async def test_a_store_is_unreadable_without_its_key(tmp_path: Path) -> None:
    path = tmp_path / "tokens.db"
    store = await open_store(str(path), env(new_key()))
    await store.put("key:alice", "github", "token", SECRET)
    await store.aclose()
    with pytest.raises(StoreError, match=f"{KEY_VARIABLE}"):
        await open_store(str(path), {})
    with pytest.raises(StoreError, match="sealed with another key"):
        await open_store(str(path), env(new_key()))
    # Past the check row too: the value itself does not open under another key.
    other = Sealer(new_key())
    (sealed,) = (
        sqlite3.connect(path)
        .execute("SELECT sealed FROM credentials WHERE caller = 'key:alice'")
        .fetchone()
    )
    assert other.open("key:alice", "github", "token", sealed) is None


async def test_a_row_moved_to_another_caller_opens_for_no_one(tmp_path: Path) -> None:
    key, path = new_key(), tmp_path / "tokens.db"
    store = await open_store(str(path), env(key))
    await store.put("key:alice", "github", "token", SECRET)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE credentials SET caller = 'key:mallory' WHERE caller = 'key:alice'")
    assert await store.values("key:mallory", "github") == {}
    with sqlite3.connect(path) as db:
        db.execute("UPDATE credentials SET caller = 'key:alice', source = 'gitlab'")
    assert await store.values("key:alice", "gitlab") == {}
    await store.aclose()


async def test_delete_forgets_one_value_and_revoke_every_value_of_a_caller(
    tmp_path: Path,
) -> None:
    store = await open_store(str(tmp_path / "tokens.db"), env(new_key()))
    await store.put("key:alice", "github", "token", SECRET)
    await store.put("key:alice", "github", "other", SECRET + "x")
    await store.put("key:alice", "jira", "token", SECRET + "y")
    await store.put("key:bob", "github", "token", SECRET + "z")
    assert await store.delete("key:alice", "github", "other") == 1
    assert await store.values("key:alice", "github") == {"token": SECRET}
    assert await store.delete("key:alice") == 2
    assert await store.entries() == [("key:bob", "github", "token")]
    assert await store.delete("key:nobody") == 0
    await store.aclose()


async def test_a_value_past_its_bound_and_a_bad_key_are_refused(tmp_path: Path) -> None:
    store = await open_store(str(tmp_path / "tokens.db"), env(new_key()))
    with pytest.raises(StoreError, match=f"at most {MAX_VALUE_BYTES} bytes"):
        await store.put("key:alice", "github", "token", "x" * (MAX_VALUE_BYTES + 1))
    await store.put("key:alice", "github", "token", "x" * MAX_VALUE_BYTES)
    await store.aclose()
    with pytest.raises(StoreError, match="32 bytes"):
        Sealer("not-a-key")


def test_connection_required_is_a_failure_the_model_reads_and_no_retry_helps() -> None:
    error = ConnectionRequired(
        source="github", message="Connect at https://gw.example/connect/github"
    )
    assert isinstance(error, AuthenticationError)
    failure = error.to_failure()
    assert (failure.code, failure.retryable) == ("ConnectionRequired", False)
    assert failure.message == "Connect at https://gw.example/connect/github"
