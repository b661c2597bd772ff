"""A stand-in for an OpenTelemetry Collector that the tracing example starts on 127.0.0.1: it
takes OTLP/HTTP exports (protobuf) and keeps the names of the spans it received."""

from __future__ import annotations

import socket
import threading

import uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


class Collector:
    def __init__(self) -> None:
        self.received: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        app = Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        # A thread of its own: the SDK exports from a thread of its own, outside any event loop.
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._listener]}, daemon=True
        )
        self._thread.start()

    async def _traces(self, request: Request) -> Response:
        export = ExportTraceServiceRequest.FromString(await request.body())
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                self.received.extend(span.name for span in scope.spans)
        return Response(status_code=200)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join()
        self._listener.close()
