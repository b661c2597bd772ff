"""The HTTP source passes every check: over operations written by hand, and over those of the
OpenAPI document the same API serves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager

import httpx
import pytest

import amends_toolkit as at
from amends_toolkit import openapi
from amends_toolkit.conformance import STATES, BlockingCalls, BlockingLog, State
from amends_toolkit.conformance.pytest_plugin import conformance_tests

from ._servers import TOKEN, WRONG_TOKEN, closed_port, http_app, serve

ECHO_SCHEMA: at.JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
NO_INPUT: at.JsonObject = {"type": "object", "properties": {}, "additionalProperties": False}

OPERATIONS = (
    at.http.Operation(
        definition=at.ToolDefinition(
            name="echo", description="Answers with the text it is given.", input_schema=ECHO_SCHEMA
        ),
        request=at.http.RequestTemplate(
            method="GET",
            path="/echo",
            params={"text": at.http.Param(location="query", name="text")},
        ),
    ),
    at.http.Operation(
        definition=at.ToolDefinition(
            name="failing", description="Reports that it failed.", input_schema=NO_INPUT
        ),
        request=at.http.RequestTemplate(method="POST", path="/failing"),
    ),
    at.http.Operation(
        definition=at.ToolDefinition(
            name="blocking", description="Never answers.", input_schema=NO_INPUT
        ),
        request=at.http.RequestTemplate(method="POST", path="/blocking"),
    ),
)


class HttpFixture:
    """``at.http.make`` over the API on loopback: a wrong token, ``/down`` or a closed port."""

    states: Sequence[State] = STATES

    def __init__(
        self,
        *,
        port: int,
        log: BlockingLog,
        operations: Sequence[at.http.Operation],
        servers: Sequence[str] = (),
    ) -> None:
        self.port = port
        self.log = log
        self.operations = operations
        self.servers = servers
        self.closed = closed_port()

    @property
    def secrets(self) -> Sequence[str]:
        addresses = (f"127.0.0.1:{self.port}", f"127.0.0.1:{self.closed}", *self.servers)
        return (TOKEN, WRONG_TOKEN, *addresses)

    def blocking_calls(self) -> BlockingCalls:
        return self.log.counts()

    @asynccontextmanager
    async def source(self, state: State) -> AsyncIterator[at.ToolSource]:
        token = WRONG_TOKEN if state == "unauthorized" else TOKEN
        base_url = {
            "working": f"http://127.0.0.1:{self.port}",
            "unauthorized": f"http://127.0.0.1:{self.port}",
            "unavailable": f"http://127.0.0.1:{self.port}/down",
            "unreachable": f"http://127.0.0.1:{self.closed}",
        }[state]
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as client:
            yield at.http.make(
                name="system", base_url=base_url, operations=self.operations, client=client
            )


@pytest.fixture(scope="module")
def system() -> Iterator[tuple[int, BlockingLog]]:
    log = BlockingLog()
    with serve(http_app(log)) as port:
        yield port, log


@pytest.fixture
def operations_by_hand(system: tuple[int, BlockingLog]) -> HttpFixture:
    port, log = system
    return HttpFixture(port=port, log=log, operations=OPERATIONS)


@pytest.fixture(scope="module")
def document_operations(system: tuple[int, BlockingLog]) -> Sequence[at.http.Operation]:
    port, _ = system
    document = httpx.get(f"http://127.0.0.1:{port}/openapi.json").raise_for_status().json()
    read = openapi.read_operations(document)
    assert read.skipped == ()
    assert [operation.definition.name for operation in read.operations] == [
        "echo",
        "failing",
        "blocking",
    ]
    return read.operations


@pytest.fixture
def operations_of_a_document(
    system: tuple[int, BlockingLog], document_operations: Sequence[at.http.Operation]
) -> HttpFixture:
    port, log = system
    # The document's own server is an address of the system too, which no model may read.
    return HttpFixture(
        port=port, log=log, operations=document_operations, servers=["example.invalid"]
    )


test_http_source_over_operations_by_hand = conformance_tests("operations_by_hand")
test_http_source_over_the_operations_of_an_openapi_document = conformance_tests(
    "operations_of_a_document"
)
