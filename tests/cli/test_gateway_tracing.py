"""The gateway's spans, sent by the SDK's OTLP exporter to a collector (a real OTLP/HTTP
receiver on loopback), continuing the trace a client sends in ``params._meta`` or in the HTTP
request's ``traceparent`` header; its audit line carries the trace id."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from conformance._servers import serve

from .gateway import NO_AUTH, GatewayProcess, eventually, grower_config
from .test_gateway_requests import CALL, MODERN

pytestmark = pytest.mark.anyio

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
HEADER_TRACE = "0af7651916cd43dd8448eb211c80319c"
HEADER_SPAN = "b7ad6b7169203331"


class Collector:
    """An OTLP/HTTP receiver: each span exported to ``/v1/traces``, as name, trace and parent."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    async def traces(self, request: Request) -> Response:
        exported = ExportTraceServiceRequest.FromString(await request.body())
        with self._lock:
            for resource in exported.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        self.spans.append(
                            {
                                "name": span.name,
                                "trace": span.trace_id.hex(),
                                "span": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "service": service.get("service.name"),
                                "attributes": {
                                    a.key: a.value.string_value for a in span.attributes
                                },
                            }
                        )
        return Response(
            ExportTraceServiceResponse().SerializeToString(),
            media_type="application/x-protobuf",
        )

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"])])

    def named(self, name: str, trace: str) -> list[dict[str, Any]]:
        with self._lock:
            return [s for s in self.spans if s["name"] == name and s["trace"] == trace]

    async def exported(self, trace: str, *names: str) -> list[dict[str, Any]]:
        """The one span of each name in ``trace``, once every one of them has come: each
        process (the gateway, its upstream) exports its spans in batches of its own, and a
        parent ends after its child, so one span come says nothing of another."""
        await eventually(lambda: all(self.named(name, trace) for name in names))
        found = []
        for name in names:
            (span,) = self.named(name, trace)
            found.append(span)
        return found


@pytest.fixture(scope="module")
def collector() -> Iterator[tuple[Collector, int]]:
    receiver = Collector()
    with serve(receiver.app()) as port:
        yield receiver, port


@pytest.fixture(scope="module")
def gateway(
    collector: tuple[Collector, int], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    _, port = collector
    telemetry = f'\n[telemetry]\notlp_endpoint = "http://127.0.0.1:{port}"\n'
    config = grower_config(tmp_path_factory.mktemp("traced"), auth=NO_AUTH + telemetry)
    # Exported within a tenth of a second of ending, not the SDK's five.
    process = GatewayProcess(config, env={"OTEL_BSP_SCHEDULE_DELAY": "100"})
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


async def call(url: str, body: dict[str, object], headers: dict[str, str]) -> None:
    async with httpx.AsyncClient() as http:
        answer = await http.post(url, content=json.dumps(body), headers=headers)
    assert answer.status_code == 200, answer.text
    assert "42" in answer.text


def audited(gateway: GatewayProcess, trace: str) -> list[dict[str, object]]:
    return [e for e in gateway.events("gateway.call") if e.get("trace_id") == trace]


async def test_a_trace_the_client_sends_in_meta_is_continued_and_exported(
    gateway: GatewayProcess, collector: tuple[Collector, int]
) -> None:
    receiver, _ = collector
    params = dict(CALL["params"])  # type: ignore[call-overload]
    params["_meta"] = {**params["_meta"], "traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"}
    await call(gateway.wait_ready(), {**CALL, "params": params}, MODERN)
    front, tool, source, upstream = await receiver.exported(
        CLIENT_TRACE,
        "tools/call grower__add",
        "execute_tool grower__add",
        "source.call grower",
        "tools/call add",
    )
    # The SDK's server span is the client's child; ours go down from it to the upstream.
    assert front["parent"] == CLIENT_SPAN
    assert tool["parent"] == front["span"]
    assert source["parent"] == tool["span"]
    assert upstream["parent"] == source["span"]
    assert upstream["attributes"]["network.transport"] == "pipe"
    assert tool["service"] == "amends-toolkit"
    await eventually(lambda: bool(audited(gateway, CLIENT_TRACE)))
    (line,) = audited(gateway, CLIENT_TRACE)
    assert line["tool"] == "grower__add"
    assert line["outcome"] == "ok"


async def test_a_trace_the_client_sends_in_the_http_headers_is_continued(
    gateway: GatewayProcess, collector: tuple[Collector, int]
) -> None:
    receiver, _ = collector
    headers = {**MODERN, "traceparent": f"00-{HEADER_TRACE}-{HEADER_SPAN}-01"}
    await call(gateway.wait_ready(), CALL, headers)
    (tool,) = await receiver.exported(HEADER_TRACE, "execute_tool grower__add")
    assert tool["parent"] == HEADER_SPAN
    await eventually(lambda: bool(audited(gateway, HEADER_TRACE)))
    (line,) = audited(gateway, HEADER_TRACE)
    assert line["outcome"] == "ok"


async def test_a_malformed_or_oversized_traceparent_starts_a_trace_of_its_own(
    gateway: GatewayProcess,
) -> None:
    before = len(gateway.events("gateway.call"))
    # A later version may carry more fields, which the API's propagator reads up to 512 characters.
    oversized = f"01-{HEADER_TRACE}-{HEADER_SPAN}-01-" + "a" * 600
    for value in ("00-xyz", oversized):
        await call(gateway.wait_ready(), CALL, {**MODERN, "traceparent": value})
    await eventually(lambda: len(gateway.events("gateway.call")) >= before + 2)
    lines = gateway.events("gateway.call")[before:]
    assert all(line["trace_id"] not in (None, HEADER_TRACE) for line in lines)


def test_the_collector_is_named_by_a_url_without_credentials(tmp_path: Path) -> None:
    from amends_toolkit.cli._config import ConfigError, load_config

    bad = '\n[telemetry]\notlp_endpoint = "http://user:pw@127.0.0.1:4318"\n'
    with pytest.raises(ConfigError, match="without credentials"):
        load_config(grower_config(tmp_path, auth=NO_AUTH + bad))


async def test_the_audit_line_carries_the_clients_trace_id_without_an_exporter(
    tmp_path: Path,
) -> None:
    params = dict(CALL["params"])  # type: ignore[call-overload]
    params["_meta"] = {**params["_meta"], "traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"}
    process = GatewayProcess(grower_config(tmp_path))
    try:
        await call(process.wait_ready(), {**CALL, "params": params}, MODERN)
        await eventually(lambda: bool(process.events("gateway.call")))
        (line,) = process.events("gateway.call")
        assert line["trace_id"] == CLIENT_TRACE
    finally:
        process.stop()
