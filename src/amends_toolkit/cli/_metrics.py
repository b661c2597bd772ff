"""The gateway's Prometheus metrics, from ``prometheus_client``, in a registry of their own.

``amends_gateway_calls_total{tool,profile}`` (a tool served to the caller, or
:data:`UNKNOWN_TOOL`; the caller's profile, by its name in the configuration),
``amends_gateway_call_failures_total{code}``,
``amends_gateway_call_seconds`` (a histogram), and per source actor, read when scraped,
``amends_actor_queued``, ``amends_actor_in_flight`` and ``amends_actor_restarts``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from prometheus_client.core import Metric

    from amends_toolkit.runtime import ActorStatistics

__all__ = ("UNKNOWN_TOOL", "GatewayMetrics")

UNKNOWN_TOOL: Final = "unknown"
"""The ``tool`` label of every call of a name the gateway does not serve, so a client's names
never become series (no tool served has it: a source's are ``source__tool``, a presentation's
``tool_search``, ``tool_call``, ``execute``)."""


class _Actors(Collector):
    def __init__(self, statistics: Callable[[], Mapping[str, ActorStatistics]]) -> None:
        self._statistics = statistics

    def collect(self) -> Iterator[Metric]:
        queued = GaugeMetricFamily(
            "amends_actor_queued",
            "Requests waiting in a source actor's mailbox.",
            labels=["source"],
        )
        in_flight = GaugeMetricFamily(
            "amends_actor_in_flight", "Requests a source actor is running.", labels=["source"]
        )
        restarts = GaugeMetricFamily(
            "amends_actor_restarts", "Times a source actor was restarted.", labels=["source"]
        )
        for name, stats in sorted(self._statistics().items()):
            queued.add_metric([name], stats.queued)
            in_flight.add_metric([name], stats.in_flight)
            restarts.add_metric([name], stats.restarts)
        yield from (queued, in_flight, restarts)


class GatewayMetrics:
    """The counters a gateway keeps, and their exposition."""

    def __init__(self, statistics: Callable[[], Mapping[str, ActorStatistics]]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "amends_gateway_calls",
            "Tool calls served.",
            ["tool", "profile"],
            registry=self.registry,
        )
        self.failures = Counter(
            "amends_gateway_call_failures",
            "Tool calls that ended as a failure, by its code.",
            ["code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "amends_gateway_call_seconds", "Seconds a tool call took.", registry=self.registry
        )
        self.registry.register(_Actors(statistics))

    def record(self, tool: str | None, code: str | None, seconds: float, *, profile: str) -> None:
        """Count one call: its tool (``None`` for a name not served), its failure's code
        (``None`` when it succeeded), its time, and the profile that served it."""
        self.calls.labels(tool=UNKNOWN_TOOL if tool is None else tool, profile=profile).inc()
        if code is not None:
            self.failures.labels(code=code).inc()
        self.latency.observe(seconds)

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes."""
        return generate_latest(self.registry)
