"""Reading the operations of an OpenAPI 3.0 or 3.1 document as HTTP operations (tools).

Reading fetches nothing and uses no address of the document except to list its ``servers``:
where requests go is the host's to say. It never raises on a well-formed JSON value but for one
that is not an OpenAPI 3 document (:class:`DocumentError`); an operation that cannot be a tool
is left out, in ``skipped``, with its reason.

A tool's name is its ``operationId`` in the characters agents accept (``[A-Za-z0-9_-]``, any
other becomes ``_``), or the method and the path (``get_pets_petId``) without one; a name longer
than 64 characters is cut and ends with a fingerprint of the whole. Its input has a property for
each parameter, named as the parameter is in the characters model APIs accept for properties
(``[A-Za-z0-9_.-]``, at most 64), with the place put before the name (``query_id``) when two
would share one or one is ``body``, and a property ``body`` for a JSON request body.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote

import attrs

from amends_toolkit._definitions import Annotations, ToolDefinition
from amends_toolkit._json import kind
from amends_toolkit.protocols.http import (
    Operation,
    Param,
    RequestTemplate,
    placeholders,
    refused_header,
)
from amends_toolkit.protocols.openapi._schema import SchemaReader, SkipReason, Unreadable

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("DocumentError", "ReadResult", "Skipped", "read_operations")

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SAFE = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_DEFAULT_STYLE = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
# OpenAPI: header parameters of these names are ignored; the client sets them.
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_MAX_NAME = 64
_MAX_REF_HOPS = 32


class DocumentError(ValueError):
    """A value that is not an OpenAPI 3 document (a Swagger 2.0 one, or no document at all)."""


@attrs.frozen(kw_only=True)
class Skipped:
    """An operation of the document that is not a tool, and why.

    ``reason`` is one of ``body_not_json``, ``parameter_style``, ``object_parameter``,
    ``cookie_parameter``, ``header_parameter``, ``path_mismatch``, ``reference``,
    ``duplicate_name`` and ``invalid``;
    ``detail`` says what, for a person. ``method`` is ``None`` for a whole path item.
    """

    method: str | None
    path: str
    operation_id: str | None
    reason: SkipReason
    detail: str


@attrs.frozen(kw_only=True)
class ReadResult:
    """What a document gave: its ``operations`` (tools), the ones ``skipped`` with their reasons,
    and its ``servers`` (URLs as written, variables unresolved), which requests do not use."""

    operations: tuple[Operation, ...]
    skipped: tuple[Skipped, ...]
    servers: tuple[str, ...]


def read_operations(document: JsonValue) -> ReadResult:
    """The operations of an OpenAPI 3.0 or 3.1 document already read as JSON.

    Raises:
        DocumentError: the value is not an OpenAPI 3 document (the message says what it is).
    """
    if not isinstance(document, dict):
        raise DocumentError(f"an OpenAPI document is a JSON object, not {kind(document)}")
    version = document.get("openapi")
    if not isinstance(version, str) or not re.match(r"3\.\d", version):
        swagger = document.get("swagger")
        if swagger is not None:
            raise DocumentError(
                f"this is a Swagger {swagger} document, not OpenAPI 3; convert it to OpenAPI 3 "
                "first (for example with swagger2openapi)"
            )
        raise DocumentError(f"not an OpenAPI 3 document: its 'openapi' is {version!r}")
    return _Reader(document, legacy=version.startswith("3.0")).read()


@attrs.frozen
class _Candidate:
    method: str
    path: str
    operation_id: str | None
    operation: Operation


class _Reader:
    def __init__(self, document: JsonObject, *, legacy: bool) -> None:
        self._document = document
        self._schemas = SchemaReader(document, legacy=legacy)
        self._skipped: list[Skipped] = []

    def read(self) -> ReadResult:
        candidates: list[_Candidate] = []
        paths = self._document.get("paths")
        for key, item in (paths if isinstance(paths, dict) else {}).items():
            path = str(key)
            try:
                resolved = self._follow(item, "pathItems", "path item")
            except Unreadable as error:
                self._skip(None, path, None, error)
                continue
            common = resolved.get("parameters")
            for method in _METHODS:
                if method not in resolved:
                    continue
                operation = resolved[method]
                operation_id = _operation_id(operation)
                try:
                    candidates.append(
                        _Candidate(
                            method.upper(),
                            path,
                            operation_id,
                            self._operation(method.upper(), path, operation, common),
                        )
                    )
                except Unreadable as error:
                    self._skip(method.upper(), path, operation_id, error)
        # The first operation of a name keeps it, in the document's order, so that a document
        # that exposes one operation under two paths still gives the tool once.
        first: dict[str, _Candidate] = {}
        operations = []
        for candidate in candidates:
            name = candidate.operation.definition.name
            if name not in first:
                first[name] = candidate
                operations.append(candidate.operation)
                continue
            owner = first[name]
            self._skip(
                candidate.method,
                candidate.path,
                candidate.operation_id,
                Unreadable(
                    "duplicate_name", f"{name!r} is already the name of {owner.method} {owner.path}"
                ),
            )
        return ReadResult(
            operations=tuple(operations), skipped=tuple(self._skipped), servers=self._servers()
        )

    def _servers(self) -> tuple[str, ...]:
        servers = self._document.get("servers")
        if not isinstance(servers, list):
            return ()
        return tuple(
            url
            for server in servers
            if isinstance(server, dict) and isinstance(url := server.get("url"), str)
        )

    def _skip(
        self, method: str | None, path: str, operation_id: str | None, error: Unreadable
    ) -> None:
        self._skipped.append(
            Skipped(
                method=method,
                path=path,
                operation_id=operation_id,
                reason=error.reason,
                detail=error.detail,
            )
        )

    def _follow(self, value: JsonValue, section: str, what: str) -> JsonObject:
        """An object of the document with its references (to ``#/components/<section>/``)
        followed."""
        for _ in range(_MAX_REF_HOPS):
            if not isinstance(value, dict):
                raise Unreadable("invalid", f"the {what} is {kind(value)}, not an object")
            ref = value.get("$ref")
            if ref is None:
                return value
            prefix = f"#/components/{section}/"
            target = None
            if isinstance(ref, str) and ref.startswith(prefix):
                components = self._document.get("components")
                entries = components.get(section) if isinstance(components, dict) else None
                name = unquote(ref[len(prefix) :]).replace("~1", "/").replace("~0", "~")
                if isinstance(entries, dict) and name in entries:
                    target = entries[name]
            if target is None:
                raise Unreadable("reference", f"the {what} refers to {ref!r}, which is not read")
            value = target
        raise Unreadable("reference", f"the {what}'s references go round in a circle")

    def _operation(self, method: str, key: str, value: JsonValue, common: JsonValue) -> Operation:
        # A fragment is never sent: documents use one to keep two operations on one path apart
        # (/files/{id}#get_shared_link).
        path = key.partition("#")[0]
        if isinstance(value, dict) and "$ref" in value:
            raise Unreadable("reference", f"the operation is a reference ({value['$ref']!r})")
        if not isinstance(value, dict):
            raise Unreadable("invalid", f"the operation is {kind(value)}, not an object")
        parameters = self._parameters(common, value.get("parameters"))
        in_path = placeholders(path)
        path_names = [str(p["name"]) for p in parameters if p["in"] == "path"]
        if sorted(in_path) != sorted(path_names):
            raise Unreadable(
                "path_mismatch",
                f"the path's placeholders {sorted(in_path)} are not its path parameters "
                f"{sorted(path_names)}",
            )
        properties: JsonObject = {}
        required: list[JsonValue] = []
        params: dict[str, Param] = {}
        refs: set[str] = set()
        for prop, parameter in zip(_property_names(parameters), parameters, strict=True):
            schema, found = self._parameter_schema(parameter)
            refs |= found
            properties[prop] = schema
            params[prop] = Param(location=parameter["in"], name=str(parameter["name"]))  # type: ignore[arg-type]
            if parameter["in"] == "path" or parameter.get("required") is True:
                required.append(prop)
        body = self._body(value.get("requestBody"))
        if body is not None:
            schema, found, body_required = body
            refs |= found
            properties["body"] = schema
            if body_required:
                required.append("body")
        input_schema: JsonObject = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        input_schema["additionalProperties"] = False
        if refs:
            input_schema["$defs"] = self._schemas.defs(refs)
        try:
            request = RequestTemplate(
                method=method, path=path, params=params, body="body" if body else None
            )
        except ValueError as error:
            raise Unreadable("invalid", str(error)) from None
        return Operation(
            definition=ToolDefinition(
                name=_tool_name(_operation_id(value), method, path),
                description=_description(value, method, path),
                input_schema=input_schema,
                annotations=_hints(method),
            ),
            request=request,
        )

    def _parameters(self, common: JsonValue, own: JsonValue) -> list[JsonObject]:
        merged: dict[tuple[str, str], JsonObject] = {}
        for group in (common, own):
            if group is None:
                continue
            if not isinstance(group, list):
                raise Unreadable("invalid", f"parameters are {kind(group)}, not a list")
            for item in group:
                parameter = self._follow(item, "parameters", "parameter")
                name, where = parameter.get("name"), parameter.get("in")
                if not isinstance(name, str) or not name:
                    raise Unreadable("invalid", "a parameter has no name")
                if not isinstance(where, str) or where not in _DEFAULT_STYLE:
                    raise Unreadable("invalid", f"parameter {name!r} is in {where!r}")
                merged[(str(where), name.lower() if where == "header" else name)] = parameter
        kept = []
        for (where, _), parameter in merged.items():
            name = str(parameter["name"])
            if where == "cookie":
                if parameter.get("required") is True:
                    raise Unreadable("cookie_parameter", f"it needs cookie {name!r}")
                continue
            if where == "header":
                if name.lower() in _IGNORED_HEADERS:
                    continue
                if not _TOKEN.fullmatch(name):
                    raise Unreadable("invalid", f"{name!r} cannot be a header name")
                why = refused_header(name)
                if why is not None:
                    raise Unreadable("header_parameter", f"header {name!r} {why}")
            if "content" in parameter and "schema" not in parameter:
                raise Unreadable(
                    "parameter_style", f"parameter {name!r} is serialized as a media type"
                )
            style = parameter.get("style", _DEFAULT_STYLE[where])
            if style != _DEFAULT_STYLE[where]:
                raise Unreadable("parameter_style", f"parameter {name!r} has style {style!r}")
            kept.append(parameter)
        order = {"path": 0, "query": 1, "header": 2}
        return sorted(kept, key=lambda p: order[str(p["in"])])

    def _parameter_schema(self, parameter: JsonObject) -> tuple[JsonValue, set[str]]:
        name, where = str(parameter["name"]), parameter["in"]
        raw = parameter.get("schema", {})
        shape = self._schemas.resolve(raw)
        if _is(shape, "object"):
            raise Unreadable("object_parameter", f"parameter {name!r} is an object")
        if _is(shape, "array"):
            items = self._schemas.resolve(shape.get("items") if isinstance(shape, dict) else None)
            if _is(items, "object") or _is(items, "array"):
                raise Unreadable("object_parameter", f"parameter {name!r} is a list of objects")
            if where == "path":
                raise Unreadable("parameter_style", f"path parameter {name!r} is a list")
            if where == "query" and parameter.get("explode") is False:
                raise Unreadable(
                    "parameter_style", f"list parameter {name!r} is not exploded (explode=false)"
                )
        schema, refs = self._schemas.schema(raw)
        schema = _described(schema, parameter.get("description"))
        if parameter.get("deprecated") is True and isinstance(schema, dict):
            schema = {**schema, "deprecated": True}
        return schema, refs

    def _body(self, value: JsonValue) -> tuple[JsonValue, set[str], bool] | None:
        if value is None:
            return None
        body = self._follow(value, "requestBodies", "request body")
        content = body.get("content")
        if not isinstance(content, dict) or not content:
            return None
        media = _json_media(list(content))
        if media is None:
            listed = ", ".join(sorted(content))
            raise Unreadable("body_not_json", f"the request body is {listed}, not JSON")
        entry = content[media]
        raw = entry.get("schema", {}) if isinstance(entry, dict) else {}
        schema, refs = self._schemas.schema(raw)
        return _described(schema, body.get("description")), refs, body.get("required") is True


def _described(schema: JsonValue, description: JsonValue) -> JsonValue:
    # A parameter's or a body's description, which the model needs, on its property's schema
    # (beside a $ref too, which 2020-12 allows).
    if isinstance(description, str) and description and isinstance(schema, dict):
        return schema if "description" in schema else {"description": description, **schema}
    return schema


def _is(schema: JsonValue, kind: Literal["object", "array"]) -> bool:
    if not isinstance(schema, dict):
        return False
    declared = schema.get("type")
    if declared == kind or (isinstance(declared, list) and kind in declared):
        return True
    return kind == "object" and declared is None and isinstance(schema.get("properties"), dict)


def _json_media(types: list[str]) -> str | None:
    def essence(media: str) -> str:
        return media.split(";", 1)[0].strip().lower()

    for media in types:
        if essence(media) == "application/json":
            return media
    for media in types:
        if essence(media).endswith(("+json", "/json")):
            return media
    return None


def _operation_id(value: JsonValue) -> str | None:
    if isinstance(value, dict):
        operation_id = value.get("operationId")
        if isinstance(operation_id, str) and operation_id:
            return operation_id
    return None


def _fit(name: str, limit: int = _MAX_NAME) -> str:
    if len(name) <= limit:
        return name
    fingerprint = hashlib.sha256(name.encode()).hexdigest()[:8]
    return name[: limit - 9] + "_" + fingerprint


def _tool_name(operation_id: str | None, method: str, path: str) -> str:
    if operation_id is not None:
        name = re.sub(r"[^A-Za-z0-9_-]", "_", operation_id)
        if name.strip("_"):
            return _fit(name)
    words = re.sub(r"[^A-Za-z0-9]+", "_", path.replace("{", "").replace("}", "")).strip("_")
    return _fit(f"{method.lower()}_{words}" if words else method.lower())


def _property_names(parameters: list[JsonObject]) -> list[str]:
    def base(parameter: JsonObject) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", str(parameter["name"]))

    bases = [base(p) for p in parameters]
    counts = Counter(bases)
    names = [
        _fit(f"{p['in']}_{b}" if counts[b] > 1 or b == "body" else b)
        for b, p in zip(bases, parameters, strict=True)
    ]
    clashes = sorted(name for name, count in Counter(names).items() if count > 1)
    if clashes:
        raise Unreadable("invalid", f"parameters would share the property names {clashes}")
    return names


def _description(value: JsonObject, method: str, path: str) -> str:
    summary, description = value.get("summary"), value.get("description")
    parts = [
        text.strip() for text in (summary, description) if isinstance(text, str) and text.strip()
    ]
    if len(parts) == 2 and parts[0] == parts[1]:
        parts = parts[:1]
    return "\n\n".join(parts) or f"{method} {path}"


def _hints(method: str) -> Annotations:
    # What HTTP says of a method, and nothing guessed beyond it.
    if method in _SAFE:
        return Annotations(read_only=True)
    if method in ("POST", "PATCH"):
        return Annotations(idempotent=False)
    if method == "DELETE":
        return Annotations(destructive=True)
    return Annotations()
