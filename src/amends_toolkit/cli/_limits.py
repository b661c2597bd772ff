"""A profile's ``limits``, enforced per caller: ``calls_per_minute`` and ``max_in_flight``.

- ``calls_per_minute``: the calls one caller may begin in any 60 seconds (a moving window of the
  ``limits`` library, kept in its storage: this process's memory, or with ``[serve]
  limits_storage = "redis://..."`` a Redis that replicas share, asked in a worker thread with
  :data:`STORAGE_TIMEOUT`; a storage that fails refuses the call, retryable, rather than let it
  past an uncounted limit).
- ``max_in_flight``: the calls one caller has running through the gateway at once, across
  sources. Past it a call is refused at once, not queued: a queued call would hold a request, a
  connection and a task per caller for as long as the caller keeps sending, the very work the
  limit bounds; the model reads when to call again.

A caller is its ``Caller.id`` (``_gateway._caller``), counted within its profile. A call past a
limit raises :class:`~amends_toolkit._errors.LimitExceeded` and reaches no source.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import TYPE_CHECKING, Final, TypeVar
from urllib.parse import urlsplit

import anyio.to_thread
from limits import RateLimitItemPerMinute
from limits.errors import StorageError
from limits.storage import MemoryStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from amends_toolkit._errors import LimitExceeded
from amends_toolkit._log import get_logger

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from amends_toolkit.cli._config import LimitsConfig

__all__ = ("IN_FLIGHT_RETRY_AFTER", "STORAGE_TIMEOUT", "CallerLimits", "limits_storage")

_log = get_logger("amends_toolkit.gateway")
_T = TypeVar("_T")

IN_FLIGHT_RETRY_AFTER: Final = 1.0
"""The ``retry_after`` of a call refused for ``max_in_flight`` or because the storage failed:
when either ends is not known, so a second is the model's hint."""
STORAGE_TIMEOUT: Final = 2.0
"""Seconds a shared storage (Redis) may take to connect or to answer one count."""


def limits_storage(uri: str) -> Storage:
    """The storage of ``[serve] limits_storage``: ``memory://`` or a Redis URL.

    Raises:
        ValueError: the URL is of no storage the ``limits`` library has, or its client library
            (``redis``) is not installed.
    """
    if uri == "memory://":
        return MemoryStorage()
    if urlsplit(uri).scheme not in ("redis", "rediss", "redis+unix"):
        raise ValueError('limits_storage must be "memory://" or a Redis URL (redis://...)')
    try:
        storage = storage_from_string(
            uri,
            wrap_exceptions=True,
            socket_timeout=STORAGE_TIMEOUT,
            socket_connect_timeout=STORAGE_TIMEOUT,
        )
    except Exception as error:  # noqa: BLE001 - the start's ConfigError says it, with the fix
        # Its type alone: the error of a URL may repeat the URL, and a password in it.
        raise ValueError(
            f"limits_storage cannot be used ({type(error).__name__}); for Redis, install its "
            "client: pip install 'limits[redis]'"
        ) from None
    assert isinstance(storage, Storage)  # a redis:// URL is the library's threaded storage
    return storage


class CallerLimits:
    """Every profile's limits, each caller's calls counted against its profile's."""

    def __init__(
        self,
        limits: Mapping[str, LimitsConfig],
        *,
        storage: Storage | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``limits``: by profile name (a profile not named has none). ``storage``: where the
        calls per minute are counted (default: this process's memory); it must keep moving
        windows. ``clock``: the storage's, in seconds since the epoch, for ``retry_after``."""
        self._limits = dict(limits)
        self._items = {
            name: RateLimitItemPerMinute(limit.calls_per_minute)
            for name, limit in self._limits.items()
            if limit.calls_per_minute is not None
        }
        storage = storage if storage is not None else MemoryStorage()
        self._window = MovingWindowRateLimiter(storage)
        # Memory answers at once; any other storage is asked over a network, off the loop.
        self._local = isinstance(storage, MemoryStorage)
        self._clock = clock
        self._running: dict[tuple[str, str], int] = {}

    @contextlib.asynccontextmanager
    async def admitted(self, profile: str, caller: str | None) -> AsyncIterator[None]:
        """Hold one of ``caller``'s calls of ``profile`` while the block runs.

        Raises:
            LimitExceeded: the caller has ``max_in_flight`` calls running, or began
                ``calls_per_minute`` in the last minute (nothing is counted then), or the
                storage failed to count it.
        """
        limit = self._limits.get(profile)
        if caller is None or limit is None:
            yield
            return
        key = (profile, caller)
        running = self._running.get(key, 0)
        if limit.max_in_flight is not None and running >= limit.max_in_flight:
            raise LimitExceeded(
                source="gateway",
                message=(
                    f"This caller has {limit.max_in_flight} calls running, the most its profile "
                    f"allows at once; call again in {IN_FLIGHT_RETRY_AFTER:g} second(s), or once "
                    "one has answered."
                ),
                retry_after=IN_FLIGHT_RETRY_AFTER,
            )
        # Taken before the count, which may await a worker thread: no second call of the
        # caller gets past the check above meanwhile.
        self._running[key] = running + 1
        try:
            item = self._items.get(profile)
            if item is not None and not await self._count(
                lambda: self._window.hit(item, profile, caller)
            ):
                stats = await self._count(
                    lambda: self._window.get_window_stats(item, profile, caller)
                )
                # The whole second past the window's end: a call at its very end still counts
                # the oldest (the library's window includes both ends).
                wait = max(1, math.floor(stats.reset_time - self._clock()) + 1)
                raise LimitExceeded(
                    source="gateway",
                    message=(
                        f"This caller made {item.amount} calls in the last minute, the most its "
                        f"profile allows; call again in {wait} second(s)."
                    ),
                    retry_after=float(wait),
                )
            yield
        finally:
            left = self._running[key] - 1
            if left:
                self._running[key] = left
            else:
                # Forgotten once idle: the table holds only callers with calls running.
                del self._running[key]

    async def _count(self, count: Callable[[], _T]) -> _T:
        """``count`` against the storage: at once in memory, else in a worker thread.

        Raises:
            LimitExceeded: the storage failed (logged): a call is never let past a limit that
                could not be counted.
        """
        try:
            if self._local:
                return count()
            return await anyio.to_thread.run_sync(count)
        except StorageError as error:
            _log.warning("gateway.limits_storage_failed", error=type(error.storage_error).__name__)
            raise LimitExceeded(
                source="gateway",
                message=(
                    "The gateway cannot count this caller's calls right now; call again in "
                    f"{IN_FLIGHT_RETRY_AFTER:g} second(s)."
                ),
                retry_after=IN_FLIGHT_RETRY_AFTER,
            ) from None
