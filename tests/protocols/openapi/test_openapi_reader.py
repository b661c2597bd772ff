"""Reading OpenAPI documents written in each test: names, properties, hints, and every skip."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import jsonschema_rs
import pytest

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.protocols.http import file_schema


def document(paths: JsonObject, *, version: str = "3.1.0", **extra: JsonValue) -> JsonObject:
    return {"openapi": version, "info": {"title": "t", "version": "1"}, "paths": paths, **extra}


def only(result: at.openapi.ReadResult) -> at.http.Operation:
    assert result.skipped == (), result.skipped
    (operation,) = result.operations
    return operation


def skipped(result: at.openapi.ReadResult) -> at.openapi.Skipped:
    assert result.operations == ()
    (skip,) = result.skipped
    return skip


FORM = "application/x-www-form-urlencoded"


def read(paths: JsonObject, **extra: Any) -> at.openapi.ReadResult:
    return at.openapi.read_operations(document(paths, **extra))


def param(name: str, where: str = "query", **extra: JsonValue) -> JsonObject:
    return {"name": name, "in": where, "schema": {"type": "string"}, **extra}


# --- the document ----------------------------------------------------------------------------


def test_a_swagger_document_is_the_one_clear_error() -> None:
    with pytest.raises(at.openapi.DocumentError, match=r"Swagger 2\.0 document, not OpenAPI 3"):
        at.openapi.read_operations({"swagger": "2.0", "paths": {}})


@pytest.mark.parametrize(
    "value", [None, 1, "openapi", [], {}, {"openapi": 3.1}, {"openapi": "2.0"}, {"openapi": "4.0"}]
)
def test_a_value_that_is_no_openapi_3_document_is_a_document_error(value: JsonValue) -> None:
    with pytest.raises(at.openapi.DocumentError):
        at.openapi.read_operations(value)
    assert issubclass(at.openapi.DocumentError, ValueError)


@pytest.mark.parametrize("version", ["3.0.0", "3.0.3", "3.1.0", "3.1.1", "3.2.0"])
def test_every_openapi_3_version_is_read(version: str) -> None:
    result = read({"/a": {"get": {"operationId": "a"}}}, version=version)
    assert [op.definition.name for op in result.operations] == ["a"]


def test_a_document_without_paths_has_no_operations() -> None:
    result = at.openapi.read_operations({"openapi": "3.1.0", "webhooks": {}})
    assert (result.operations, result.skipped, result.servers) == ((), (), ())


def test_servers_are_listed_and_never_used_for_requests() -> None:
    result = read(
        {"/items": {"get": {"operationId": "list", "servers": [{"url": "https://op.example"}]}}},
        servers=[{"url": "https://api.example/v1"}, {"url": "{scheme}://x"}, {"nourl": 1}, "x"],
    )
    assert result.servers == ("https://api.example/v1", "{scheme}://x")
    assert only(result).request.path == "/items"


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation_id", "name"),
    [
        ("listPets", "listPets"),
        ("indexes.documents.get", "indexes_documents_get"),
        ("get_file#shared link", "get_file_shared_link"),
        ("créer-élément", "cr_er-_l_ment"),
    ],
)
def test_a_name_is_the_operation_id_in_the_characters_agents_accept(
    operation_id: str, name: str
) -> None:
    result = read({"/a": {"post": {"operationId": operation_id}}})
    assert only(result).definition.name == name


@pytest.mark.parametrize(
    ("path", "method", "name"),
    [
        ("/pets/{petId}", "get", "get_pets_petId"),
        ("/", "delete", "delete"),
        ("/v1/users/{user-id}/keys.json", "put", "put_v1_users_user_id_keys_json"),
    ],
)
def test_a_name_without_operation_id_is_the_method_and_path(
    path: str, method: str, name: str
) -> None:
    parameters: list[JsonValue] = [param(p, "path") for p in re.findall(r"\{([^}]*)\}", path)]
    result = read({path: {method: {"parameters": parameters}}})
    assert only(result).definition.name == name


def test_a_long_name_is_cut_to_64_with_a_fingerprint_of_the_whole() -> None:
    first, second = "a" * 70 + "_first", "a" * 70 + "_second"
    result = read({"/a": {"get": {"operationId": first}}, "/b": {"get": {"operationId": second}}})
    names = [op.definition.name for op in result.operations]
    assert all(len(name) == 64 and name.startswith("a" * 55 + "_") for name in names)
    assert names[0] != names[1]
    again = read({"/a": {"get": {"operationId": first}}})
    assert only(again).definition.name == names[0]


def test_the_first_operation_of_a_name_keeps_it_and_later_ones_are_skipped() -> None:
    result = read(
        {
            "/a": {"get": {"operationId": "same"}, "post": {"operationId": "other"}},
            "/b": {"delete": {"operationId": "same"}},
            "/c": {"get": {"operationId": "sa.me"}},
            "/d": {"get": {"operationId": "sa_me"}},
        }
    )
    assert [op.definition.name for op in result.operations] == ["same", "other", "sa_me"]
    assert [op.request.path for op in result.operations] == ["/a", "/a", "/c"]
    assert [(s.method, s.path, s.reason) for s in result.skipped] == [
        ("DELETE", "/b", "duplicate_name"),
        ("GET", "/d", "duplicate_name"),
    ]
    assert "GET /a" in result.skipped[0].detail
    assert "GET /c" in result.skipped[1].detail
    assert result.skipped[1].operation_id == "sa_me"


# --- properties -------------------------------------------------------------------------------


def test_each_parameter_is_a_property_and_the_body_is_body() -> None:
    operation = only(
        read(
            {
                "/shops/{shop}/items": {
                    "parameters": [param("shop", "path", description="The shop.")],
                    "post": {
                        "operationId": "create",
                        "parameters": [
                            param("dry_run", required=True, schema={"type": "boolean"}),
                            param("X-Request-Id", "header"),
                            param("tags", schema={"type": "array", "items": {"type": "string"}}),
                        ],
                        "requestBody": {
                            "required": True,
                            "description": "The item.",
                            "content": {
                                "application/json": {
                                    "schema": {"type": "object", "required": ["name"]}
                                }
                            },
                        },
                    },
                }
            }
        )
    )
    assert operation.definition.input_schema == {
        "type": "object",
        "properties": {
            "shop": {"description": "The shop.", "type": "string"},
            "dry_run": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "X-Request-Id": {"type": "string"},
            "body": {"description": "The item.", "type": "object", "required": ["name"]},
        },
        "required": ["shop", "dry_run", "body"],
        "additionalProperties": False,
    }
    assert operation.request == at.http.RequestTemplate(
        method="POST",
        path="/shops/{shop}/items",
        params={
            "shop": at.http.Param(location="path", name="shop"),
            "dry_run": at.http.Param(location="query", name="dry_run"),
            "tags": at.http.Param(location="query", name="tags"),
            "X-Request-Id": at.http.Param(location="header", name="X-Request-Id"),
        },
        body="body",
    )


def test_property_names_keep_only_the_characters_agents_accept() -> None:
    operation = only(
        read({"/a": {"get": {"parameters": [param("filter[name]"), param("user.id"), param("é")]}}})
    )
    assert list(operation.definition.input_schema["properties"]) == [  # type: ignore[arg-type]
        "filter_name_",
        "user.id",
        "_",
    ]
    assert operation.request.params["filter_name_"].name == "filter[name]"


def test_the_place_goes_before_a_name_two_would_share_or_that_is_body() -> None:
    operation = only(
        read(
            {
                "/items/{id}": {
                    "put": {
                        "parameters": [
                            param("id", "path"),
                            param("id"),
                            param("ID", "header"),
                            param("body"),
                            param("x-y", "header"),
                            param("x_y"),
                        ],
                        "requestBody": {"content": {"application/json": {"schema": {}}}},
                    }
                }
            }
        )
    )
    params = operation.request.params
    assert {prop: (p.location, p.name) for prop, p in params.items()} == {
        "path_id": ("path", "id"),
        "query_id": ("query", "id"),
        "query_body": ("query", "body"),
        "x_y": ("query", "x_y"),
        "ID": ("header", "ID"),
        "x-y": ("header", "x-y"),
    }
    assert operation.request.body == "body"


def test_operation_parameters_override_the_path_items_and_references_are_followed() -> None:
    operation = only(
        read(
            {
                "/a": {
                    "parameters": [param("limit", description="path-level")],
                    "get": {
                        "parameters": [
                            {"$ref": "#/components/parameters/Limit"},
                            {"$ref": "#/components/parameters/Alias"},
                        ]
                    },
                }
            },
            components={
                "parameters": {
                    "Limit": param("limit", description="operation-level"),
                    "Alias": {"$ref": "#/components/parameters/Page"},
                    "Page": param("page"),
                }
            },
        )
    )
    properties = operation.definition.input_schema["properties"]
    assert properties == {
        "limit": {"description": "operation-level", "type": "string"},
        "page": {"type": "string"},
    }


def test_accept_content_type_authorization_headers_and_optional_cookies_are_left_out() -> None:
    operation = only(
        read(
            {
                "/a": {
                    "get": {
                        "parameters": [
                            param("Accept", "header"),
                            param("content-type", "header"),
                            param("Authorization", "header", required=True),
                            param("session", "cookie"),
                            param("q"),
                        ]
                    }
                }
            }
        )
    )
    assert list(operation.request.params) == ["q"]


def test_explode_false_on_a_single_value_and_a_header_list_are_read() -> None:
    operation = only(
        read(
            {
                "/a": {
                    "get": {
                        "parameters": [
                            param("q", explode=False),
                            param("X-Ids", "header", schema={"type": "array", "items": {}}),
                            param("ids", explode=True, schema={"type": "array"}),
                        ]
                    }
                }
            }
        )
    )
    assert list(operation.request.params) == ["q", "ids", "X-Ids"]


def test_a_json_body_is_chosen_among_media_types() -> None:
    operation = only(
        read(
            {
                "/a": {
                    "patch": {
                        "requestBody": {
                            "content": {
                                "application/x-www-form-urlencoded": {"schema": {}},
                                "application/merge-patch+json": {"schema": {"type": "object"}},
                            }
                        }
                    }
                }
            }
        )
    )
    assert operation.definition.input_schema["properties"] == {"body": {"type": "object"}}
    assert "required" not in operation.definition.input_schema


def test_a_body_reference_is_followed_and_an_empty_body_is_none() -> None:
    result = read(
        {
            "/a": {
                "post": {
                    "operationId": "a",
                    "requestBody": {"$ref": "#/components/requestBodies/Item"},
                },
                "put": {"operationId": "b", "requestBody": {"content": {}}},
            }
        },
        components={
            "requestBodies": {
                "Item": {"required": True, "content": {"application/json": {"schema": {}}}}
            }
        },
    )
    by_name = {op.definition.name: op for op in result.operations}
    first, second = by_name["a"], by_name["b"]
    assert first.definition.input_schema["required"] == ["body"]
    assert first.request.body == "body"
    assert second.request.body is None


# --- hints and descriptions -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "hints"),
    [
        ("get", at.Annotations(read_only=True)),
        ("head", at.Annotations(read_only=True)),
        ("options", at.Annotations(read_only=True)),
        ("trace", at.Annotations(read_only=True)),
        ("post", at.Annotations(idempotent=False)),
        ("patch", at.Annotations(idempotent=False)),
        ("delete", at.Annotations(destructive=True)),
        ("put", at.Annotations()),
    ],
)
def test_hints_are_what_http_says_of_the_method_only(method: str, hints: at.Annotations) -> None:
    operation = only(read({"/a": {method: {"summary": "Delete everything", "x-readOnly": True}}}))
    assert operation.definition.annotations == hints


def test_the_keywords_are_the_path_and_the_tags() -> None:
    tagged: JsonObject = {"tags": ["Pets", 3, "Store"], "summary": "List pets"}
    path: JsonObject = {"in": "path", "name": "id", "required": True, "schema": {"type": "string"}}
    operation = only(read({"/pets/{id}#x": {"get": {**tagged, "parameters": [path]}}}))
    assert operation.definition.keywords == ("/pets/{id}", "Pets", "Store")
    assert only(read({"/pets": {"get": {"tags": "Pets"}}})).definition.keywords == ("/pets",)


@pytest.mark.parametrize(
    ("words", "description"),
    [
        ({"summary": "List pets", "description": "All of them."}, "List pets\n\nAll of them."),
        ({"summary": "List pets", "description": "List pets"}, "List pets"),
        ({"description": " All. "}, "All."),
        ({"summary": 3}, "GET /pets"),
        ({}, "GET /pets"),
    ],
)
def test_the_description_is_the_summary_and_description(
    words: JsonObject, description: str
) -> None:
    assert only(read({"/pets": {"get": words}})).definition.description == description


# --- skips -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "reason", "detail"),
    [
        (
            {"requestBody": {"content": {"application/xml": {"schema": {"type": "object"}}}}},
            "body_not_json",
            "application/xml",
        ),
        (
            {
                "requestBody": {
                    "content": {
                        "text/csv": {"schema": {"type": "array"}},
                        "application/xml": {"schema": {"type": "object"}},
                    }
                }
            },
            "body_not_json",
            "application/xml, text/csv",
        ),
        ({"requestBody": {"content": "?"}}, "invalid", "content is a string"),
        ({"requestBody": {"content": ["application/json"]}}, "invalid", "not a map"),
        ({"requestBody": {"description": "no content"}}, "invalid", "content is null"),
        (
            {"parameters": [param("q", style="spaceDelimited", explode=True)]},
            "parameter_style",
            "not defined with explode=true",
        ),
        ({"parameters": [param("q", style="deepObject")]}, "parameter_style", "deepObject"),
        ({"parameters": [param("X", "header", style="form")]}, "parameter_style", "'form'"),
        ({"parameters": [param("p", "path", style="form")]}, "parameter_style", "'form'"),
        ({"parameters": [param("q", style="matrix")]}, "parameter_style", "'matrix'"),
        ({"parameters": [param("q", explode="no")]}, "parameter_style", "true or false"),
        (
            {
                "parameters": [
                    param("q", style="deepObject", explode=False, schema={"type": "object"})
                ]
            },
            "parameter_style",
            "only with explode=true",
        ),
        (
            {"parameters": [{"name": "q", "in": "query", "content": {"application/json": {}}}]},
            "parameter_style",
            "media type",
        ),
        (
            {"parameters": [param("q", schema={"properties": {"a": {"type": "object"}}})]},
            "object_parameter",
            "parameter 'q' holds lists or objects",
        ),
        (
            {
                "parameters": [
                    param("q", schema={"type": "object", "additionalProperties": {"type": "array"}})
                ]
            },
            "object_parameter",
            "lists or objects",
        ),
        (
            {
                "parameters": [
                    param(
                        "q",
                        schema={"type": "array", "items": {"$ref": "#/components/schemas/Filter"}},
                    )
                ]
            },
            "object_parameter",
            "lists or objects",
        ),
        (
            {"parameters": [param("q", schema={"type": "array", "items": {"type": "object"}})]},
            "object_parameter",
            "lists or objects",
        ),
        (
            {
                "requestBody": {
                    "content": {
                        FORM: {
                            "schema": {"properties": {"a": {"type": "array", "items": {}}}},
                            "encoding": {"a": {"style": "deepObject", "explode": False}},
                        }
                    }
                }
            },
            "parameter_style",
            "form field 'a'",
        ),
        (
            {
                "requestBody": {
                    "content": {
                        FORM: {
                            "schema": {
                                "properties": {"a": {"type": "array", "items": {"type": "array"}}}
                            }
                        }
                    }
                }
            },
            "object_parameter",
            "form field 'a' holds lists or objects",
        ),
        ({"parameters": [param("sid", "cookie", required=True)]}, "cookie_parameter", "'sid'"),
        ({"$ref": "./operations/get.yaml"}, "reference", "./operations/get.yaml"),
        (
            {"parameters": [{"$ref": "common.yaml#/components/parameters/Q"}]},
            "reference",
            "common.yaml",
        ),
        (
            {"parameters": [{"$ref": "#/components/parameters/Missing"}]},
            "reference",
            "Missing",
        ),
        (
            {"requestBody": {"$ref": "#/components/requestBodies/Missing"}},
            "reference",
            "Missing",
        ),
        (
            {"parameters": [param("q", schema={"$ref": "common.yaml#/Q"})]},
            "reference",
            "common.yaml#/Q",
        ),
        (
            {"parameters": [param("q", schema={"$ref": "#/components/schemas/Nope"})]},
            "reference",
            "Nope",
        ),
        (
            {
                "parameters": [
                    param("q", schema={"$ref": "#/components/schemas/Filter/properties/a"})
                ]
            },
            "reference",
            "not a schema of this document",
        ),
        (
            {"parameters": [param("q", schema={"$ref": "#/components/parameters/P"})]},
            "reference",
            "#/components/parameters/P",
        ),
        (
            {
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Broken"}}
                    }
                }
            },
            "reference",
            "schema 'Broken'",
        ),
        ({"parameters": [{"in": "query"}]}, "invalid", "no name"),
        ({"parameters": [param("q", "body")]}, "invalid", "'body'"),
        ({"parameters": [param("a b", "header")]}, "invalid", "header name"),
        ({"parameters": {"q": {}}}, "invalid", "not a list"),
        ({"parameters": ["q"]}, "invalid", "string"),
        (
            {"parameters": [param("a_b"), param("a-b"), param("a.b"), param("a b")]},
            "invalid",
            "share the property names",
        ),
    ],
)
def test_an_operation_that_cannot_be_a_tool_is_skipped_with_its_reason(
    operation: JsonObject, reason: str, detail: str
) -> None:
    result = read(
        {"/a": {"post": {"operationId": "op", **operation}}},
        components={
            "schemas": {
                "Filter": {"type": "object", "properties": {"a": {}}},
                "Broken": {"properties": {"x": {"$ref": "other.yaml#/X"}}},
            },
            "parameters": {"P": param("p")},
        },
    )
    skip = skipped(result)
    assert (skip.method, skip.path, skip.reason) == ("POST", "/a", reason)
    assert detail in skip.detail, skip.detail


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("/items/{id}", []),
        ("/items", ["id"]),
        ("/items/{id}", ["item_id"]),
        ("/items/:id", ["id"]),
        ("/items/{id}/{id}", ["id"]),
    ],
)
def test_a_path_its_parameters_do_not_match_is_skipped(path: str, names: list[str]) -> None:
    result = read({path: {"get": {"parameters": [param(name, "path") for name in names]}}})
    assert skipped(result).reason == "path_mismatch"


def test_a_query_in_a_path_is_sent_with_every_request_and_a_fragment_is_not_sent() -> None:
    result = read(
        {
            "/files/{id}#shared": {
                "get": {"operationId": "a", "parameters": [param("id", "path")]}
            },
            "/responses?beta=true&v=": {"get": {"operationId": "b"}},
            "/twice?q=1": {"get": {"operationId": "c", "parameters": [param("q")]}},
        }
    )
    first, second = result.operations
    assert first.request.path == "/files/{id}"
    assert (second.request.path, second.request.query) == ("/responses", {"beta": "true", "v": ""})
    (skip,) = result.skipped
    assert (skip.path, skip.reason) == ("/twice?q=1", "invalid")


def test_path_items_that_cannot_be_read_are_skipped_whole() -> None:
    result = read(
        {
            "/a": {"$ref": "paths.yaml#/a"},
            "/b": [],
            "/c": {"$ref": "#/components/pathItems/C"},
        },
        components={"pathItems": {"C": {"get": {"operationId": "c"}}}},
    )
    assert [op.definition.name for op in result.operations] == ["c"]
    assert [(s.method, s.path, s.reason) for s in result.skipped] == [
        (None, "/a", "reference"),
        (None, "/b", "invalid"),
    ]


def test_a_cycle_of_references_between_parameters_is_skipped() -> None:
    result = read(
        {"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/A"}]}}},
        components={
            "parameters": {
                "A": {"$ref": "#/components/parameters/B"},
                "B": {"$ref": "#/components/parameters/A"},
            }
        },
    )
    assert skipped(result).reason == "reference"


# --- reading never raises ----------------------------------------------------------------------

RICH = document(
    {
        "/pets/{petId}": {
            "parameters": [param("petId", "path")],
            "get": {
                "operationId": "getPet",
                "parameters": [
                    param("fields", schema={"type": "array", "items": {"type": "string"}}),
                    {"$ref": "#/components/parameters/Trace"},
                ],
            },
            "put": {
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    },
                }
            },
        }
    },
    version="3.0.3",
    servers=[{"url": "https://x"}],
    components={
        "parameters": {"Trace": param("X-Trace", "header")},
        "schemas": {
            "Pet": {
                "type": "object",
                "nullable": True,
                "required": ["id", "name"],
                "properties": {
                    "id": {
                        "type": "integer",
                        "readOnly": True,
                        "minimum": 0,
                        "exclusiveMinimum": True,
                    },
                    "name": {"type": "string", "pattern": "^[a-z]+$", "example": "rex"},
                    "owner": {"$ref": "#/components/schemas/Owner"},
                    "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
                },
            },
            "Owner": {"allOf": [{"$ref": "#/components/schemas/Pet"}], "nullable": True},
            "Tag": {"type": "string", "enum": ["a", "b"], "nullable": True},
        },
    },
)

JUNK: list[JsonValue] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "x",
    "#/components/schemas/Pet",
    "{petId}",
    [],
    [None],
    ["x", 1],
    {},
    {"$ref": "#/components/schemas/Pet"},
    {"$ref": 5},
    {"$ref": "#/components/schemas/Owner"},
    {"type": "object"},
    {"in": "path", "name": "petId"},
    {"nullable": True},
]


def _mutations(value: JsonValue, rng: random.Random) -> JsonValue:
    copy = json.loads(json.dumps(value))
    nodes: list[tuple[Any, Any]] = []

    def walk(node: JsonValue) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                nodes.append((node, key))
                walk(item)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                nodes.append((node, index))
                walk(item)

    walk(copy)
    for _ in range(rng.randint(1, 4)):
        parent, key = rng.choice(nodes)
        parent[key] = rng.choice(JUNK)
    return copy  # type: ignore[no-any-return]


def test_reading_never_raises_on_a_well_formed_json_value() -> None:
    rng = random.Random(20261130)
    read_any = 0
    for _ in range(1000):
        mutated = _mutations(RICH, rng)
        try:
            result = at.openapi.read_operations(mutated)
        except at.openapi.DocumentError:
            assert not (isinstance(mutated, dict) and mutated.get("openapi") == "3.0.3")
            continue
        read_any += 1
        for operation in result.operations:
            schema = operation.definition.input_schema
            assert jsonschema_rs.meta.is_valid(schema), schema
            jsonschema_rs.validator_for(schema, offline=True)
            at.catalog.load(at.http.Operation, at.catalog.dump(operation))
    assert read_any > 800


def test_a_schema_nested_too_deeply_skips_its_operation_and_does_not_raise() -> None:
    deep: JsonObject = {"type": "string"}
    for _ in range(5000):
        deep = {"type": "array", "items": deep}
    result = read(
        {
            "/a": {
                "post": {
                    "operationId": "deep",
                    "requestBody": {"content": {"application/json": {"schema": deep}}},
                }
            }
        }
    )
    skip = skipped(result)
    assert (skip.reason, skip.operation_id) == ("invalid", "deep")
    assert "nested more than 64 levels" in skip.detail


def test_every_operation_read_is_catalog_data() -> None:
    result = at.openapi.read_operations(RICH)
    assert len(result.operations) == 2
    for operation in result.operations:
        data = at.catalog.dump(operation)
        assert json.loads(json.dumps(data)) == data
        assert at.catalog.load(at.http.Operation, data) == operation


# --- styles and bodies that are not JSON --------------------------------------------------------


def body_of(operation: at.http.Operation) -> Any:
    properties: Any = operation.definition.input_schema["properties"]
    return properties["body"]


def test_parameter_styles_are_kept_in_the_template_and_defaults_left_out() -> None:
    operation = only(
        read(
            {
                "/a/{id}": {
                    "get": {
                        "parameters": [
                            param("id", "path", required=True, style="label", explode=True),
                            param("fields", explode=False, schema={"type": "array", "items": {}}),
                            param("tags", style="form", explode=True, schema={"type": "array"}),
                            param(
                                "meta",
                                style="deepObject",
                                explode=True,
                                schema={
                                    "type": "object",
                                    "additionalProperties": {"type": "string"},
                                },
                            ),
                            param("range", schema={"type": "object", "properties": {"gt": {}}}),
                            param("X-Obj", "header", schema={"type": "object"}),
                        ]
                    }
                }
            }
        )
    )
    params = operation.request.params
    assert params["id"] == at.http.Param(location="path", name="id", style="label", explode=True)
    assert params["fields"] == at.http.Param(location="query", name="fields", explode=False)
    assert params["tags"] == at.http.Param(location="query", name="tags")
    assert params["meta"].style == "deepObject"
    assert params["range"] == at.http.Param(location="query", name="range")
    assert params["X-Obj"] == at.http.Param(location="header", name="X-Obj")


def test_a_form_body_is_an_object_with_each_fields_style() -> None:
    operation = only(
        read(
            {
                "/a": {
                    "post": {
                        "requestBody": {
                            "required": True,
                            "content": {
                                FORM: {
                                    "schema": {
                                        "properties": {
                                            "To": {"type": "string"},
                                            "Tags": {"type": "array", "items": {"type": "string"}},
                                            "Meta": {"type": "object"},
                                        },
                                        "required": ["To"],
                                    },
                                    "encoding": {
                                        "Tags": {"style": "form", "explode": False},
                                        "Meta": {"style": "deepObject", "explode": True},
                                        "To": {"style": "form", "explode": True},
                                    },
                                }
                            },
                        }
                    }
                }
            }
        )
    )
    request = operation.request
    assert (request.body, request.media_type) == ("body", FORM)
    assert request.encoding == {
        "Tags": at.http.Encoding(explode=False),
        "Meta": at.http.Encoding(style="deepObject", explode=True),
    }
    body = body_of(operation)
    assert body["type"] == "object"
    assert list(body["properties"]) == ["To", "Tags", "Meta"]
    assert body["required"] == ["To"]
    assert operation.definition.input_schema["required"] == ["body"]


def test_a_multipart_body_makes_its_binary_fields_files() -> None:
    operation = only(
        read(
            {
                "/upload": {
                    "post": {
                        "requestBody": {
                            "content": {
                                "multipart/form-data": {
                                    "schema": {"$ref": "#/components/schemas/Upload"},
                                    "encoding": {
                                        "image": {"contentType": "image/png"},
                                        "photos": {"contentType": "image/png, image/jpeg"},
                                        "sdp": {"contentType": "application/sdp"},
                                    },
                                }
                            }
                        }
                    }
                }
            },
            components={
                "schemas": {
                    "Upload": {
                        "type": "object",
                        "required": ["image"],
                        "properties": {
                            "image": {
                                "type": "string",
                                "format": "binary",
                                "description": "The image.",
                            },
                            "photos": {
                                "type": "array",
                                "items": {"type": "string", "contentMediaType": "image/png"},
                            },
                            "clip": {"type": "string", "contentEncoding": "binary"},
                            "sdp": {"type": "string"},
                            "text": {"type": "string", "contentEncoding": "base64"},
                        },
                    }
                }
            },
        )
    )
    request = operation.request
    assert request.media_type == "multipart/form-data"
    assert request.encoding == {
        "image": at.http.Encoding(content_type="image/png", file=True),
        "photos": at.http.Encoding(file=True),
        "clip": at.http.Encoding(file=True),
        "sdp": at.http.Encoding(content_type="application/sdp"),
    }
    body = body_of(operation)
    assert body["properties"]["image"] == file_schema("The image.")
    assert body["properties"]["photos"] == {
        "type": "array",
        "items": file_schema(),
    }
    assert body["properties"]["text"] == {"type": "string", "contentEncoding": "base64"}
    assert body["required"] == ["image"]


@pytest.mark.parametrize(
    ("content", "media_type"),
    [
        ({"image/jpeg": {"schema": {"type": "string", "format": "binary"}}}, "image/jpeg"),
        ({"application/octet-stream": {}}, "application/octet-stream"),
        ({"text/plain": {"schema": {"type": "string"}}, "application/xml": {}}, "text/plain"),
        (
            {"application/merge-patch+json": {"schema": {"type": "object"}}},
            "application/merge-patch+json",
        ),
        ({"application/json; charset=utf-8": {"schema": {"type": "object"}}}, None),
    ],
)
def test_a_body_of_another_media_type_is_a_file_and_json_keeps_its_type(
    content: JsonObject, media_type: str | None
) -> None:
    operation = only(read({"/a": {"put": {"requestBody": {"content": content}}}}))
    assert (operation.request.body, operation.request.media_type) == ("body", media_type)
    body = body_of(operation)
    if media_type is not None and not media_type.endswith("json"):
        assert body == file_schema(named=False)


@pytest.mark.parametrize(
    ("content", "media_type"),
    [
        (
            {
                "multipart/form-data": {"schema": {"type": "object"}},
                "application/x-www-form-urlencoded": {"schema": {"type": "object"}},
            },
            "application/x-www-form-urlencoded",
        ),
        (
            {
                "application/octet-stream": {},
                "multipart/form-data": {"schema": {"type": "object"}},
            },
            "multipart/form-data",
        ),
    ],
)
def test_a_form_is_preferred_to_multipart_form_data_and_that_to_a_file(
    content: JsonObject, media_type: str
) -> None:
    operation = only(read({"/a": {"post": {"requestBody": {"content": content}}}}))
    assert operation.request.media_type == media_type
