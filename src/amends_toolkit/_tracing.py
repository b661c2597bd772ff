"""OpenTelemetry spans of tool calls, made only when the host set a tracer provider.

The library depends on the OpenTelemetry API alone (the ``otel`` extra) and never configures an
SDK or an exporter, as it never configures logging. Without the package, or before the host sets
a tracer provider (``opentelemetry.trace.set_tracer_provider``), a call costs one check
(:func:`tracer`, asked once per call by :func:`amends_toolkit.runtime._call.run_tool`) and
nothing else: the layers below ask :func:`traced`, a context variable's own ``get``, which says
whether the call running in this context is traced.

The spans of one call, parented in this order (see docs/guides/tracing.md):

=====================================  =======  ===============================================
span                                   kind     made by
=====================================  =======  ===============================================
``execute_tool {tool}``                INTERNAL the toolkit's one call path (a Session's call,
                                                tool search's ``tool_call``, code mode's
                                                ``execute`` and each call its code makes)
``source.call {source}``               INTERNAL the actor, in the task that runs the call (its
                                                caller's, or a worker's: the caller's context
                                                crosses the mailbox in the ``Call`` message)
``tools/call {tool}``                  CLIENT   an MCP source, per request; its context goes
                                                to the server in ``params._meta``
``{METHOD} {path template}``           CLIENT   an HTTP source, per request
=====================================  =======  ===============================================

Attributes follow the OpenTelemetry GenAI semantic conventions v0.1.0
(``open-telemetry/semantic-conventions-genai``: the ``execute_tool`` span and the MCP client
span) and semantic conventions v1.41.0 for HTTP client spans and ``error.type``. A span holds names a host chose (a tool's, a source's, a path
template) and codes (a failure's reason, a status, a JSON-RPC error code): never an input value,
an answer, a header, a failure's words or an exception's message, and no address but the one an
HTTP client span requires (``server.address`` and ``server.port`` of the source's base URL; its
``url.full``, required too, is left out: it holds the input's values, and ``url.template`` says
the route). No exception is recorded on a span: its message may hold a value.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Final, TypeVar

import anyio

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ModuleNotFoundError:  # the otel extra is not installed: every call is untraced
    otel_trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, MutableMapping
    from contextlib import AbstractContextManager

    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = (
    "Carried",
    "activated",
    "attached",
    "carried",
    "deactivated",
    "detached",
    "error_code",
    "extracted",
    "failed",
    "injected",
    "span",
    "trace_id",
    "traced",
    "tracer",
)

_T = TypeVar("_T")

_NAME: Final = "amends_toolkit"
_tracer: Tracer | None = None
_PROPAGATOR: Final = None if otel_trace is None else TraceContextTextMapPropagator()

_ACTIVE: contextvars.ContextVar[Tracer | None] = contextvars.ContextVar(
    "amends_toolkit_traced", default=None
)

traced: Callable[[], Tracer | None] = _ACTIVE.get
"""The tracer when the call running in this context is traced, else ``None``: the context
variable's own ``get`` (no Python frame), which an actor, an MCP request and an HTTP request
ask instead of :func:`tracer`."""


def tracer() -> Tracer | None:
    """The library's tracer once the host has set a tracer provider; ``None`` before, and
    always without the ``opentelemetry-api`` package: the one check of a call.

    A provider is set once in a process (the API refuses a second), so the tracer is kept once
    found.
    """
    global _tracer
    if _tracer is not None:
        return _tracer
    if otel_trace is None:
        return None
    provider = otel_trace.get_tracer_provider()
    if isinstance(provider, (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)):
        return None
    _tracer = provider.get_tracer(_NAME)
    return _tracer


def span(
    tracer: Tracer,
    name: str,
    attributes: Mapping[str, str | float],
    *,
    client: bool = False,
    context: Context | None = None,
) -> AbstractContextManager[Span]:
    """A span of ``tracer`` made current inside the block (kind ``CLIENT`` when ``client``,
    else ``INTERNAL``; a child of ``context`` when given, else of the current span). No
    exception is recorded on it, nor does one set its status: :func:`failed` says what failed."""
    return tracer.start_as_current_span(
        name,
        context=context,
        kind=otel_trace.SpanKind.CLIENT if client else otel_trace.SpanKind.INTERNAL,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    )


def activated(tracer: Tracer) -> contextvars.Token[Tracer | None]:
    """Say that the calls made in this context from now on are traced (undo with the token)."""
    return _ACTIVE.set(tracer)


def deactivated(token: contextvars.Token[Tracer | None]) -> None:
    """Undo :func:`activated`."""
    _ACTIVE.reset(token)


def failed(span: Span, code: str) -> None:
    """Mark ``span`` failed with ``code`` as its ``error.type`` (a description would be words
    that may hold a value: none is given)."""
    span.set_attribute("error.type", code)
    span.set_status(otel_trace.StatusCode.ERROR)


def error_code(error: BaseException) -> str:
    """The ``error.type`` of an exception: a source failure's reason name (``UnavailableError``),
    else the exception's class name (a defect, a wire error)."""
    reason = getattr(error, "reason", None)
    return reason if isinstance(reason, str) else type(error).__qualname__


def injected(carrier: MutableMapping[str, str]) -> None:
    """Write the current span's W3C trace context in ``carrier``: ``traceparent``, and
    ``tracestate`` when it has one; never ``baggage`` (a host's values, which a third party is
    not sent)."""
    if _PROPAGATOR is not None:
        _PROPAGATOR.inject(carrier)


def extracted(carrier: Mapping[str, object]) -> Context | None:
    """The remote context of a valid ``traceparent`` (and its ``tracestate``) in ``carrier``,
    else ``None``: one that is malformed, or longer than the API's propagator reads (512
    characters), starts no trace of the client's."""
    if _PROPAGATOR is None:
        return None
    fields = {
        key: value
        for key in ("traceparent", "tracestate")
        if isinstance(value := carrier.get(key), str)
    }
    if "traceparent" not in fields:
        return None
    context: Context = _PROPAGATOR.extract(fields)
    if not otel_trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def trace_id() -> str | None:
    """The current span's trace id as 32 hex digits, or ``None`` outside a valid span (or
    without the package): for a log line."""
    if otel_trace is None:
        return None
    context = otel_trace.get_current_span().get_span_context()
    return otel_trace.format_trace_id(context.trace_id) if context.is_valid else None


def attached(context: Context | None) -> object | None:
    """Make ``context`` the current one (a client's trace to continue); the token detaches it."""
    return None if context is None else otel_context.attach(context)


def detached(token: object | None) -> None:
    """Undo :func:`attached`."""
    if token is not None:
        otel_context.detach(token)  # type: ignore[arg-type]


class Carried:
    """A traced call's context, carried across an actor's mailbox in its ``Call`` message, and
    when the call was made (for the time it waited)."""

    __slots__ = ("context", "made", "tracer")

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.context = otel_context.get_current()
        self.made = anyio.current_time()

    async def run(self, source: str, tool: str, call: Awaitable[_T]) -> _T:
        """Await ``call`` (the source's) in a ``source.call`` span, a child of the caller's
        span, with the seconds the call waited before it ran (in the mailbox, or for a slot)."""
        waited = max(0.0, anyio.current_time() - self.made)
        attributes: dict[str, str | float] = {
            "amends_toolkit.source.name": source,
            "gen_ai.tool.name": tool,
            "amends_toolkit.actor.queued_seconds": waited,
        }
        with span(self.tracer, f"source.call {source}", attributes, context=self.context) as made:
            # The task running it may be a worker's: the layers below read this to trace.
            token = _ACTIVE.set(self.tracer)
            try:
                return await call
            except Exception as error:
                failed(made, error_code(error))
                raise
            finally:
                _ACTIVE.reset(token)


def carried() -> Carried | None:
    """What a call made now carries across a mailbox: ``None`` when it is not traced."""
    tracer = _ACTIVE.get()
    return None if tracer is None else Carried(tracer)
