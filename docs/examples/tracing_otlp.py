"""OpenTelemetry: a host sets the SDK's tracer provider once, at start, and every call's spans go
to an OTLP/HTTP collector; here one this file starts on 127.0.0.1 (otlp_collector.py), in a
program an OpenTelemetry Collector (or Jaeger, Tempo, Honeycomb, ...) on 127.0.0.1:4318."""

from __future__ import annotations

import anyio
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otlp_collector import Collector

import amends_toolkit as at

collector = Collector()  # in a program: "http://127.0.0.1:4318", a collector of your own

provider = TracerProvider(resource=Resource.create({"service.name": "my-agent"}))
provider.add_span_processor(
    BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces"))
)
trace.set_tracer_provider(provider)


class Notes:
    name = "notes"

    async def discover(self) -> list[at.ToolDefinition]:
        schema: at.JsonObject = {"type": "object", "properties": {"q": {"type": "string"}}}
        return [at.ToolDefinition(name="search", description="Search notes.", input_schema=schema)]

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        return {"notes": ["call Ana"]}


async def main() -> None:
    async with at.Runtime() as runtime:
        notes = await runtime.spawn(Notes())
        toolkit = at.assemble([at.Member(notes, await notes.discover())], lambda s, d: "allow")
        async with at.Session(toolkit, approve=lambda name, input: False) as session:
            print(await session.call("notes__search", {"q": "Ana"}))


anyio.run(main)
provider.shutdown()  # sends the spans still batched
print("the collector received:", sorted(collector.received))
collector.stop()
