"""A profile's ``limits``, enforced per caller: ``calls_per_minute`` and ``max_in_flight``.

- ``calls_per_minute``: the calls one caller may begin in any 60 seconds (a moving window of the
  ``limits`` library, kept in its storage: memory, one process's; the storage is a constructor
  argument, so a store that replicas share is one more kind of it).
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
from typing import TYPE_CHECKING, Final

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from amends_toolkit._errors import LimitExceeded

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from limits.storage import Storage

    from amends_toolkit.cli._config import LimitsConfig

__all__ = ("IN_FLIGHT_RETRY_AFTER", "CallerLimits")

IN_FLIGHT_RETRY_AFTER: Final = 1.0
"""The ``retry_after`` of a call refused for ``max_in_flight``: when one of the caller's calls
ends is not known, so a second is the model's hint."""


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
        self._window = MovingWindowRateLimiter(storage if storage is not None else MemoryStorage())
        self._clock = clock
        self._running: dict[tuple[str, str], int] = {}

    @contextlib.contextmanager
    def admitted(self, profile: str, caller: str | None) -> Iterator[None]:
        """Hold one of ``caller``'s calls of ``profile`` while the block runs.

        Raises:
            LimitExceeded: the caller has ``max_in_flight`` calls running, or began
                ``calls_per_minute`` in the last minute; nothing is counted then.
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
        item = self._items.get(profile)
        if item is not None and not self._window.hit(item, profile, caller):
            reset = self._window.get_window_stats(item, profile, caller).reset_time
            # The whole second past the window's end: a call at its very end still counts
            # the oldest (the library's window includes both ends).
            wait = max(1, math.floor(reset - self._clock()) + 1)
            raise LimitExceeded(
                source="gateway",
                message=(
                    f"This caller made {item.amount} calls in the last minute, the most its "
                    f"profile allows; call again in {wait} second(s)."
                ),
                retry_after=float(wait),
            )
        self._running[key] = running + 1
        try:
            yield
        finally:
            left = self._running[key] - 1
            if left:
                self._running[key] = left
            else:
                # Forgotten once idle: the table holds only callers with calls running.
                del self._running[key]
