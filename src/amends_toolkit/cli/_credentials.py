"""The gateway's credential store: each caller's own secrets and tokens for per-caller sources.

Every value is sealed with AES-GCM (the ``cryptography`` package's AEAD) under one key from
the environment (``AMENDS_CREDENTIALS_KEY``, 32 bytes in URL-safe base64: make one with
``amends-toolkit credentials new-key``), a fresh 12-byte nonce each write, and the row's
``(caller, source, name)`` as its associated data: a value copied to another caller's (or
source's, or name's) row does not open, and a store read without its key opens nothing. The
names (who has what) are stored in the clear; the values never are.

Two stores behind one :class:`CredentialStore` Protocol: :class:`SqliteCredentialStore` (the
default, a file of mode 0600 beside the configuration) and :class:`RedisCredentialStore`
(several gateway replicas share one Redis). Each store keeps a sealed check value, written at
its first opening: a store opened with another key is refused at start.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import sqlite3
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from amends_toolkit._log import get_logger

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path

    from redis.asyncio import Redis

__all__ = (
    "KEY_VARIABLE",
    "MAX_VALUE_BYTES",
    "CredentialStore",
    "RedisCredentialStore",
    "Sealer",
    "SqliteCredentialStore",
    "StoreError",
    "new_key",
    "open_store",
)

_log = get_logger("amends_toolkit.credentials")

KEY_VARIABLE: Final = "AMENDS_CREDENTIALS_KEY"
"""The environment variable that holds the store's key."""
MAX_VALUE_BYTES: Final = 16_384
"""The longest value a store keeps (a secret, or a caller's OAuth tokens as JSON)."""
_NONCE: Final = 12
_CHECK: Final = ("", "", "key-check")
"""The row of the sealed check value (no caller's id is empty)."""


class StoreError(ValueError):
    """The store cannot be used: no key, a wrong key, a value too long (the message says)."""


def new_key() -> str:
    """A fresh key for ``AMENDS_CREDENTIALS_KEY``: 32 random bytes in URL-safe base64."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


class Sealer:
    """AES-GCM over one key, each value bound to its ``(caller, source, name)``.

    Raises:
        StoreError: the key is not 32 bytes in URL-safe base64.
    """

    def __init__(self, key: str) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            raw = base64.urlsafe_b64decode(key.encode("ascii"))
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raw = b""
        if len(raw) != 32:
            raise StoreError(
                f"{KEY_VARIABLE} must be 32 bytes in URL-safe base64 "
                "(make one with: amends-toolkit credentials new-key)"
            )
        self._aead = AESGCM(raw)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Sealer:
        """The sealer of the key in ``AMENDS_CREDENTIALS_KEY``.

        Raises:
            StoreError: the variable is not set, or holds no key.
        """
        key = (os.environ if environ is None else environ).get(KEY_VARIABLE)
        if not key:
            raise StoreError(
                f"the credential store needs its key in the environment variable {KEY_VARIABLE} "
                "(make one with: amends-toolkit credentials new-key)"
            )
        return cls(key)

    def seal(self, caller: str, source: str, name: str, value: str) -> bytes:
        """``value`` sealed for this row.

        Raises:
            StoreError: the value is longer than ``MAX_VALUE_BYTES``.
        """
        data = value.encode()
        if len(data) > MAX_VALUE_BYTES:
            raise StoreError(f"a stored value may be at most {MAX_VALUE_BYTES} bytes")
        nonce = secrets.token_bytes(_NONCE)
        return nonce + self._aead.encrypt(nonce, data, _bound(caller, source, name))

    def open(self, caller: str, source: str, name: str, sealed: bytes) -> str | None:
        """The value sealed for this row; ``None`` when it does not open (another key, or a
        value sealed for another row)."""
        from cryptography.exceptions import InvalidTag

        try:
            data = self._aead.decrypt(
                sealed[:_NONCE], sealed[_NONCE:], _bound(caller, source, name)
            )
        except (InvalidTag, ValueError):
            return None
        return data.decode()


def _bound(caller: str, source: str, name: str) -> bytes:
    """The associated data of a row: its three parts, unambiguously (JSON's quoting)."""
    return json.dumps([caller, source, name]).encode()


class CredentialStore(Protocol):
    """Where the gateway keeps each caller's credentials, sealed (see the module's docstring).

    Every method may be called from any task; a value is written whole or not at all.
    """

    async def values(self, caller: str, source: str) -> dict[str, str]:
        """The caller's values for a source, by name (those that do not open are left out,
        and logged)."""
        ...

    async def put(self, caller: str, source: str, name: str, value: str) -> None:
        """Keep (or replace) one value.

        Raises:
            StoreError: the value is too long.
        """
        ...

    async def delete(self, caller: str, source: str | None = None, name: str | None = None) -> int:
        """Forget one value, a caller's values for a source, or (``source`` None) every value
        of a caller: an admin's revocation. The number of values forgotten."""
        ...

    async def entries(self) -> list[tuple[str, str, str]]:
        """Every row's ``(caller, source, name)``, sorted: never a value."""
        ...

    async def aclose(self) -> None:
        """Close the store's connection."""
        ...


class SqliteCredentialStore:
    """A :class:`CredentialStore` in one SQLite file (mode 0600, WAL, so the admin command may
    write while a gateway reads), each query in a worker thread.

    Raises:
        StoreError: the key is not the store's (its check value does not open).
    """

    def __init__(self, path: Path, sealer: Sealer) -> None:
        self.path = path
        self._sealer = sealer
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = anyio.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS credentials (caller TEXT NOT NULL, source TEXT NOT NULL,"
            " name TEXT NOT NULL, sealed BLOB NOT NULL, PRIMARY KEY (caller, source, name))"
        )
        row = self._db.execute(
            "SELECT sealed FROM credentials WHERE caller = ? AND source = ? AND name = ?", _CHECK
        ).fetchone()
        if row is None:
            self._db.execute(
                "INSERT INTO credentials VALUES (?, ?, ?, ?)",
                (*_CHECK, sealer.seal(*_CHECK, _CHECK[2])),
            )
        elif sealer.open(*_CHECK, row[0]) is None:
            self._db.close()
            raise StoreError(
                f"the credential store {path} was sealed with another key than "
                f"{KEY_VARIABLE}'s: give the key it was made with"
            )

    async def _run(self, sql: str, parameters: Sequence[object] = ()) -> tuple[list[Any], int]:
        """The rows a statement gives and the rows it changed, in a worker thread."""

        def run() -> tuple[list[Any], int]:
            cursor = self._db.execute(sql, parameters)
            return cursor.fetchall(), cursor.rowcount

        async with self._lock:
            return await anyio.to_thread.run_sync(run)

    async def values(self, caller: str, source: str) -> dict[str, str]:
        rows, _ = await self._run(
            "SELECT name, sealed FROM credentials WHERE caller = ? AND source = ?", (caller, source)
        )
        return _opened(self._sealer, caller, source, rows)

    async def put(self, caller: str, source: str, name: str, value: str) -> None:
        sealed = self._sealer.seal(caller, source, name, value)
        await self._run(
            "INSERT OR REPLACE INTO credentials VALUES (?, ?, ?, ?)", (caller, source, name, sealed)
        )

    async def delete(self, caller: str, source: str | None = None, name: str | None = None) -> int:
        where, parameters = "caller = ? AND caller != ''", [caller]
        if source is not None:
            where += " AND source = ?"
            parameters.append(source)
        if name is not None:
            where += " AND name = ?"
            parameters.append(name)
        _, count = await self._run(f"DELETE FROM credentials WHERE {where}", parameters)
        return count

    async def entries(self) -> list[tuple[str, str, str]]:
        rows, _ = await self._run(
            "SELECT caller, source, name FROM credentials WHERE caller != '' ORDER BY 1, 2, 3"
        )
        return [(str(c), str(s), str(n)) for c, s, n in rows]

    async def aclose(self) -> None:
        async with self._lock:
            self._db.close()


_PREFIX: Final = "amends:credentials:"
"""The prefix of a Redis store's keys: one hash per (caller, source), and the index of them."""
_INDEX: Final = _PREFIX + "index"


class RedisCredentialStore:
    """A :class:`CredentialStore` in Redis, which several gateway replicas share: a hash per
    ``(caller, source)`` (name to sealed value) and a set indexing them.

    Open it with :meth:`open`, which checks the key.
    """

    def __init__(self, client: Redis, sealer: Sealer) -> None:
        self._redis = client
        self._sealer = sealer

    @classmethod
    async def open(cls, url: str, sealer: Sealer) -> RedisCredentialStore:
        """The store at ``url``.

        Raises:
            StoreError: the key is not the store's, or the Redis cannot be reached.
        """
        from redis.asyncio import Redis
        from redis.exceptions import RedisError

        store = cls(Redis.from_url(url), sealer)
        try:
            key = _PREFIX + "check"
            await store._redis.set(key, sealer.seal(*_CHECK, _CHECK[2]), nx=True)
            check = await store._redis.get(key)
        except RedisError as error:
            await store.aclose()
            raise StoreError(
                f"the credential store cannot be reached ({type(error).__name__})"
            ) from None
        if not isinstance(check, bytes) or sealer.open(*_CHECK, check) is None:
            await store.aclose()
            raise StoreError(
                f"the credential store was sealed with another key than {KEY_VARIABLE}'s: "
                "give the key it was made with"
            )
        return store

    @staticmethod
    def _key(caller: str, source: str) -> str:
        return _PREFIX + json.dumps([caller, source])

    async def values(self, caller: str, source: str) -> dict[str, str]:
        found = await self._redis.hgetall(self._key(caller, source))  # type: ignore[misc]
        return _opened(self._sealer, caller, source, [(n.decode(), s) for n, s in found.items()])

    async def put(self, caller: str, source: str, name: str, value: str) -> None:
        sealed = self._sealer.seal(caller, source, name, value)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._key(caller, source), name, sealed)  # type: ignore[arg-type]
            pipe.sadd(_INDEX, json.dumps([caller, source]))
            await pipe.execute()

    async def delete(self, caller: str, source: str | None = None, name: str | None = None) -> int:
        pairs = [(caller, source)] if source is not None else await self._pairs(caller)
        forgotten = 0
        for one, two in pairs:
            key = self._key(one, two)
            if name is not None:
                forgotten += int(await self._redis.hdel(key, name))  # type: ignore[misc]
            else:
                forgotten += int(await self._redis.hlen(key))  # type: ignore[misc]
                await self._redis.delete(key)
            if not await self._redis.exists(key):
                await self._redis.srem(_INDEX, json.dumps([one, two]))  # type: ignore[misc]
        return forgotten

    async def _pairs(self, caller: str | None = None) -> list[tuple[str, str]]:
        members = await self._redis.smembers(_INDEX)  # type: ignore[misc]
        pairs = [tuple(json.loads(member)) for member in members]
        return sorted((c, s) for c, s in pairs if caller is None or c == caller)

    async def entries(self) -> list[tuple[str, str, str]]:
        found: list[tuple[str, str, str]] = []
        for caller, source in await self._pairs():
            names = await self._redis.hkeys(self._key(caller, source))  # type: ignore[misc]
            found.extend((caller, source, name.decode()) for name in names)
        return sorted(found)

    async def aclose(self) -> None:
        await self._redis.aclose()


def _opened(
    sealer: Sealer, caller: str, source: str, rows: Iterable[tuple[str, bytes]]
) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, sealed in rows:
        value = sealer.open(caller, source, name, sealed)
        if value is None:
            # Sealed for another row or under another key: the operator's to look into; the
            # caller is as one that has not connected.
            _log.warning("credentials.unopened", source=source, secret=name)
        else:
            values[name] = value
    return values


async def open_store(store: str, environ: Mapping[str, str] | None = None) -> CredentialStore:
    """The store ``[credentials] store`` names (a ``${VAR}`` expanded), under the key from
    ``AMENDS_CREDENTIALS_KEY``.

    Raises:
        StoreError: no key, a wrong key, an unset variable, a store that cannot be opened.
    """
    from pathlib import Path

    values = os.environ if environ is None else environ
    if store.startswith("${") and store.endswith("}"):
        variable = store[2:-1]
        if not values.get(variable):
            raise StoreError(f"[credentials] store: set the environment variable {variable}")
        store = values[variable]
    sealer = Sealer.from_environment(values)
    if store.startswith(("redis://", "rediss://", "redis+unix://", "unix://")):
        return await RedisCredentialStore.open(store, sealer)
    try:
        return await anyio.to_thread.run_sync(SqliteCredentialStore, Path(store), sealer)
    except (OSError, sqlite3.Error) as error:
        raise StoreError(f"the credential store {store} cannot be opened ({error})") from None
