"""The gateway's exporter: the OpenTelemetry SDK's, sending spans to a collector over OTLP/HTTP.

The library itself never configures an SDK (see :mod:`amends_toolkit._tracing`); the gateway is a
host, and it does when ``[telemetry] otlp_endpoint`` is set or the standard variables name a
collector (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), unless
``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``. The SDK reads the other standard
variables itself (``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``). It needs the ``otlp``
extra; without it the gateway does not start, and says what to install.

Spans are exported in batches by the SDK's own thread; at the gateway's end the ones left are
sent, at most :data:`FLUSH_TIMEOUT` seconds, off the event loop.
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final

import anyio

from amends_toolkit._extras import missing_extra
from amends_toolkit._log import get_logger

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from amends_toolkit.cli._config import TelemetryConfig

__all__ = ("FLUSH_TIMEOUT", "exporting", "wanted")

_log = get_logger(__name__)

FLUSH_TIMEOUT: Final = 5.0
"""Seconds the gateway's end waits for the spans left to be sent; past it they are dropped."""

_ENDPOINTS: Final = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def wanted(config: TelemetryConfig, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the gateway exports spans: an endpoint is configured or named by the variables,
    and the variables do not turn the SDK or its traces off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return config.otlp_endpoint is not None or any(env.get(name) for name in _ENDPOINTS)


@asynccontextmanager
async def exporting(config: TelemetryConfig) -> AsyncIterator[None]:
    """Hold the SDK's tracer provider, set as the process's, while the block runs, if
    :func:`wanted`; else nothing.

    Raises:
        ModuleNotFoundError: export is wanted and the ``otlp`` extra is not installed.
    """
    if not wanted(config):
        yield
        return
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ModuleNotFoundError as error:
        raise missing_extra(
            error, extra="otlp", modules=("opentelemetry",), needed_by="exporting spans"
        ) from None

    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; they win.
    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: config.service_name}
    provider = TracerProvider(resource=Resource.create(named))
    endpoint = config.otlp_endpoint
    exporter = (
        OTLPSpanExporter()
        if endpoint is None
        else OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _log.info("gateway.tracing", exporter="otlp")
    try:
        yield
    finally:

        def flushed() -> None:
            provider.force_flush(int(FLUSH_TIMEOUT * 1000))
            provider.shutdown()

        # Off the loop, and bounded: a collector that does not answer holds no exit.
        with anyio.move_on_after(FLUSH_TIMEOUT + 1, shield=True):
            await anyio.to_thread.run_sync(flushed, abandon_on_cancel=True)
