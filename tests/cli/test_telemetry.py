"""When the gateway exports spans (``cli/_telemetry.py``), and the ``[telemetry]`` table's and a
source's ``propagate_trace`` checks (``cli/_config.py``)."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import TracerProvider
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import amends_toolkit as at
from amends_toolkit import _tracing
from amends_toolkit.cli._config import ConfigError, TelemetryConfig, load_config
from amends_toolkit.cli._sources import build_source
from amends_toolkit.cli._telemetry import wanted
from conformance._servers import serve

from .gateway import NO_AUTH, grower_config
from .upstream import NOTES_DOCUMENT

CONFIGURED = TelemetryConfig(otlp_endpoint="http://127.0.0.1:4318")
UNSET = TelemetryConfig()


@pytest.mark.parametrize(
    ("config", "environ", "exports"),
    [
        (UNSET, {}, False),
        (CONFIGURED, {}, True),
        (UNSET, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        (UNSET, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        (UNSET, {"OTEL_SERVICE_NAME": "gw"}, False),
        (CONFIGURED, {"OTEL_SDK_DISABLED": "true"}, False),
        (CONFIGURED, {"OTEL_TRACES_EXPORTER": "none"}, False),
        (UNSET, {"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
    ],
)
def test_spans_are_exported_when_an_endpoint_is_named_and_nothing_turns_them_off(
    config: TelemetryConfig, environ: dict[str, str], exports: bool
) -> None:
    assert wanted(config, environ) is exports


def test_the_telemetry_table_is_read_with_its_defaults(tmp_path: Path) -> None:
    table = '\n[telemetry]\notlp_endpoint = "https://collector.example:4318"\n'
    config = load_config(grower_config(tmp_path, auth=NO_AUTH + table))
    assert config.telemetry == TelemetryConfig(otlp_endpoint="https://collector.example:4318")
    assert load_config(grower_config(tmp_path)).telemetry == UNSET


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('otlp_endpoint = "collector:4318"', "otlp_endpoint must be"),
        ('otlp_endpoint = "http://127.0.0.1:4318/?token=x"', "otlp_endpoint must be"),
        ('service_name = ""', "service_name must be"),
        ("sampler = 1", "unknown key 'sampler' in \\[telemetry\\]"),
    ],
)
def test_a_bad_telemetry_table_is_refused(tmp_path: Path, table: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_config(grower_config(tmp_path, auth=NO_AUTH + f"\n[telemetry]\n{table}\n"))


def test_propagate_trace_is_for_openapi_sources(tmp_path: Path) -> None:
    path = grower_config(tmp_path)
    path.write_text(
        path.read_text().replace('name = "grower"', 'name = "grower"\npropagate_trace = true', 1)
    )
    with pytest.raises(ConfigError, match="propagate_trace is for openapi sources"):
        load_config(path)


@pytest.mark.anyio
async def test_an_openapi_source_with_propagate_trace_sends_traceparent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = TracerProvider()
    monkeypatch.setattr(otel_trace, "get_tracer_provider", lambda: provider)
    monkeypatch.setattr(_tracing, "_tracer", None)
    seen: list[str | None] = []

    async def notes(request: Request) -> Response:
        seen.append(request.headers.get("traceparent"))
        return JSONResponse([])

    (tmp_path / "notes.json").write_text(json.dumps(NOTES_DOCUMENT))
    with serve(Starlette(routes=[Route("/notes", notes)])) as port:
        path = tmp_path / "gateway.toml"
        for propagate in ("true", "false"):
            path.write_text(
                f'[[sources]]\nname = "notes"\nopenapi = "notes.json"\n'
                f'base_url = "http://127.0.0.1:{port}"\npropagate_trace = {propagate}\n'
                '[policy]\nallow = ["*"]\n' + NO_AUTH
            )
            async with AsyncExitStack() as stack:
                built = await build_source(load_config(path).sources[0], stack)
                toolkit = at.source_toolkit(built.source, await built.source.discover())
                await toolkit.call("listNotes", {})
    assert seen[0] is not None
    assert seen[0].startswith("00-")
    assert seen[1] is None
