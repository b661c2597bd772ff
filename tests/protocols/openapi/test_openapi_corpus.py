"""The real-world documents of tests/data/openapi-corpus (see its README): every one reads, every
tool's input is JSON Schema 2020-12 that jsonschema-rs compiles, and the counts are pinned."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import jsonschema_rs
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

CORPUS = Path(__file__).parents[2] / "data" / "openapi-corpus"
SWAGGER = "petstore-swagger-2.0.json"

# Operations read, and operations skipped by reason, per document. A change in the reader that
# changes these must change this table, so the change is seen and reviewed.
EXPECTED: dict[str, tuple[int, dict[str, int]]] = {
    "adyen-management-v3-3.1.json": (134, {}),
    "adyen-terminal-api-v1-3.1.json": (18, {}),
    # GET /search: mdfilters is a list of objects, which no OpenAPI style writes in a query.
    "box-3.0.json": (295, {"object_parameter": 1}),
    "callback-example-3.0.yaml": (1, {}),
    "camara-quality-on-demand-3.0.yaml": (0, {"reference": 5}),
    "digitalocean-root-3.0.yaml": (0, {"reference": 659}),
    "discord-3.1.json": (242, {}),
    "meilisearch-v1.4-3.1.yaml": (64, {"duplicate_name": 1, "path_mismatch": 6, "reference": 1}),
    "openai-3.1.yaml": (288, {}),
    "parameters-style-3.1.yaml": (25, {}),
    "petstore-3.0.yaml": (3, {}),
    "qdrant-3.0.json": (69, {}),
    "spotify-3.0.yaml": (97, {}),
    "stapi-star-trek-3.0.yaml": (120, {}),
    "temporal-3.0.yaml": (105, {"duplicate_name": 121}),
    "tictactoe-3.1.yaml": (3, {}),
    "twilio-messaging-v1-3.0.yaml": (58, {}),
    "uspto-3.0.json": (3, {}),
    "webhook-example-3.1.yaml": (0, {}),
}

# The ten real APIs issue 13 measured: 1,602 operations, 122 of them a second path of one RPC.
LARGEST = (
    "openai-3.1.yaml",
    "box-3.0.json",
    "adyen-management-v3-3.1.json",
    "discord-3.1.json",
    "temporal-3.0.yaml",
    "qdrant-3.0.json",
    "twilio-messaging-v1-3.0.yaml",
    "stapi-star-trek-3.0.yaml",
    "spotify-3.0.yaml",
    "meilisearch-v1.4-3.1.yaml",
)

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
PROPERTY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def manifest() -> dict[str, dict[str, JsonValue]]:
    entries = json.loads((CORPUS / "manifest.json").read_text())
    return {entry["file"]: entry for entry in entries}


@functools.cache
def result(name: str) -> at.openapi.ReadResult:
    return at.openapi.read_operations(at.openapi.read_document(CORPUS / name))


def test_the_corpus_is_whole_and_unchanged() -> None:
    assert (CORPUS / "README.md").is_file()
    assert set(manifest()) == set(EXPECTED) | {SWAGGER}
    for line in (CORPUS / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, name
    licences = {path.name for path in (CORPUS / "LICENSES").iterdir()}
    for entry in manifest().values():
        owner_repo = str(entry["source_repo"]).replace("/", "__") + ".txt"
        assert owner_repo in licences, owner_repo


def test_the_swagger_document_is_the_one_clear_error() -> None:
    document = at.openapi.read_document(CORPUS / SWAGGER)
    with pytest.raises(at.openapi.DocumentError, match=r"Swagger 2\.0"):
        at.openapi.read_operations(document)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_document_reads_to_the_recorded_counts(name: str) -> None:
    read = result(name)
    operations, reasons = EXPECTED[name]
    assert (len(read.operations), dict(Counter(s.reason for s in read.skipped))) == (
        operations,
        reasons,
    )
    # Every operation of the document is either a tool or skipped, none lost silently.
    assert len(read.operations) + len(read.skipped) == manifest()[name]["operations"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_tool_is_valid_json_schema_that_compiles_under_a_name_that_fits(name: str) -> None:
    read = result(name)
    names = [operation.definition.name for operation in read.operations]
    assert len(set(names)) == len(names)
    for operation in read.operations:
        definition = operation.definition
        assert TOOL_NAME.fullmatch(definition.name), definition.name
        schema = definition.input_schema
        assert jsonschema_rs.meta.is_valid(schema), definition.name
        jsonschema_rs.validator_for(schema, offline=True)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        properties = schema["properties"]
        assert isinstance(properties, dict)
        assert all(PROPERTY_NAME.fullmatch(prop) for prop in properties), list(properties)
        assert set(operation.request.params) | {operation.request.body} - {None} <= set(properties)
        text = json.dumps(schema)
        assert "#/components/" not in text
        refs = set(re.findall(r'"\$ref": "([^"]*)"', text))
        defs = schema.get("$defs", {})
        assert isinstance(defs, dict)
        assert refs <= {f"#/$defs/{key}" for key in defs}, refs


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_address_of_the_document_is_used(name: str) -> None:
    read = result(name)
    for operation in read.operations:
        assert operation.request.path.startswith("/")
        assert "://" not in operation.request.path
    urls = manifest()[name]["server_urls"]
    assert isinstance(urls, list)
    assert list(read.servers) == urls


def test_at_least_97_percent_of_the_operations_that_are_not_duplicates_are_read() -> None:
    operations = sum(int(str(manifest()[name]["operations"])) for name in LARGEST)
    duplicates = sum(
        1 for name in LARGEST for skip in result(name).skipped if skip.reason == "duplicate_name"
    )
    read = sum(len(result(name).operations) for name in LARGEST)
    assert operations == 1602
    assert read / (operations - duplicates) >= 0.97, (read, operations, duplicates)
    for name in LARGEST:
        assert all(skip.detail for skip in result(name).skipped)


def test_the_documents_with_external_references_fetch_nothing_and_skip() -> None:
    for name in ("camara-quality-on-demand-3.0.yaml", "digitalocean-root-3.0.yaml"):
        read = result(name)
        assert read.operations == ()
        assert {skip.reason for skip in read.skipped} == {"reference"}


def test_cyclic_schemas_of_the_corpus_are_under_defs() -> None:
    tools = {op.definition.name: op for op in result("qdrant-3.0.json").operations}
    schema = tools["scroll_points"].definition.input_schema
    defs = schema["$defs"]
    assert isinstance(defs, dict)
    assert {"Filter", "Condition", "Nested"} <= set(defs)
    validator = jsonschema_rs.validator_for(schema, offline=True)
    nested = {
        "must": [
            {"nested": {"key": "a", "filter": {"must": [{"key": "b", "match": {"value": 1}}]}}}
        ]
    }
    assert validator.is_valid({"collection_name": "c", "body": {"filter": nested}})
    assert not validator.is_valid({"collection_name": "c", "body": {"filter": {"must_be": 5}}})
    assert not validator.is_valid({"collection_name": "c", "body": {"limit": 0}})


def dig(value: JsonValue, *keys: str) -> JsonObject:
    """The object at ``keys`` in ``value``, each step an object."""
    for key in keys:
        assert isinstance(value, dict), value
        value = value[key]
    assert isinstance(value, dict), value
    return value


def property_names(schema: JsonValue) -> set[str]:
    """The names of every properties map in a schema, however deep."""
    found: set[str] = set()
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict):
                found.update(node["properties"])  # type: ignore[arg-type]
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_tool_of_the_corpus_offers_a_property_named_ref(name: str) -> None:
    for operation in result(name).operations:
        assert "$ref" not in property_names(operation.definition.input_schema)


def test_meilisearch_s_multi_search_offers_the_search_query_s_own_fields() -> None:
    # Its document writes $ref: '#/components/schemas/searchQuery/properties' among the
    # properties of each query (issue 32, item 9).
    (multi_search,) = [
        operation
        for operation in result("meilisearch-v1.4-3.1.yaml").operations
        if operation.definition.name == "multi_search"
    ]
    schema = multi_search.definition.input_schema
    query = dig(schema, "properties", "body", "properties", "queries", "items")
    assert query["additionalProperties"] is False
    assert {"indexUid", "q", "filter", "limit", "attributesToRetrieve"} <= set(
        dig(query, "properties")
    )
    assert jsonschema_rs.validator_for(schema, offline=True).is_valid(
        {"body": {"queries": [{"indexUid": "movies", "q": "back to the future", "limit": 5}]}}
    )
