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
would share one or one is ``body``, and a property ``body`` for the request body. Its
annotations say what HTTP says of its method, and its ``keywords`` (which tool search reads and
the model is never shown) are its path and its tags.

Parameters keep their ``style`` and ``explode`` in the template; a list or an object of anything
but scalars is skipped (``object_parameter``), as is a style OpenAPI leaves undefined
(``parameter_style``). The body is the first of: JSON (``application/json``, then a ``+json``
type, sent under its own name), a form (``application/x-www-form-urlencoded``, each field's
encoding style kept), multipart form data (each binary field a file the model gives as text or
base64; a field's ``contentType`` kept; styles ignored, as OpenAPI 3.1.0 says), or a file of any
other media type whose schema is a string or none; else ``body_not_json``. A ``requestBody``
whose ``content`` is not a map of media types is ``invalid``.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qsl, unquote

import attrs

from amends_toolkit._definitions import Annotations, ToolDefinition
from amends_toolkit._json import JsonValue, kind
from amends_toolkit.protocols.http import (
    FORM,
    MULTIPART,
    Encoding,
    Operation,
    Param,
    RequestTemplate,
    file_schema,
    is_media_type,
    placeholders,
    refused_header,
    style_problem,
)
from amends_toolkit.protocols.openapi._schema import SchemaReader, SkipReason, Unreadable

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject

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
        # (/files/{id}#get_shared_link). A query in a path key, which OpenAPI does not allow
        # but documents write (/responses?beta=true), is sent with every request.
        path, _, fixed = key.partition("#")[0].partition("?")
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
            params[prop] = _param(parameter)
            if parameter["in"] == "path" or parameter.get("required") is True:
                required.append(prop)
        body = self._body(value.get("requestBody"))
        if body is not None:
            refs |= body.refs
            properties["body"] = body.schema
            if body.required:
                required.append("body")
        input_schema: JsonObject = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        input_schema["additionalProperties"] = False
        if refs:
            input_schema["$defs"] = self._schemas.defs(refs)
        try:
            request = RequestTemplate(
                method=method,
                path=path,
                params=params,
                body="body" if body else None,
                media_type=body.media_type if body else None,
                encoding=body.encoding if body else {},
                query=dict(parse_qsl(fixed, keep_blank_values=True)),
            )
        except ValueError as error:
            raise Unreadable("invalid", str(error)) from None
        return Operation(
            definition=ToolDefinition(
                name=_tool_name(_operation_id(value), method, path),
                description=_description(value, method, path),
                input_schema=input_schema,
                annotations=_hints(method),
                keywords=_keywords(value, path),
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
            problem = style_problem(where, parameter.get("style"), parameter.get("explode"))
            if problem is not None:
                raise Unreadable("parameter_style", f"parameter {name!r}: {problem}")
            kept.append(parameter)
        order = {"path": 0, "query": 1, "header": 2}
        return sorted(kept, key=lambda p: order[str(p["in"])])

    def _parameter_schema(self, parameter: JsonObject) -> tuple[JsonValue, set[str]]:
        name = str(parameter["name"])
        raw = parameter.get("schema", {})
        self._flat(raw, f"parameter {name!r}")
        if parameter.get("style") == "deepObject" and not _is(self._schemas.resolve(raw), "object"):
            raise Unreadable("parameter_style", f"parameter {name!r} is a deepObject but no object")
        schema, refs = self._schemas.schema(raw)
        schema = _described(schema, parameter.get("description"))
        if parameter.get("deprecated") is True and isinstance(schema, dict):
            schema = {**schema, "deprecated": True}
        return schema, refs

    def _flat(self, raw: JsonValue, what: str) -> None:
        """Refuses a value OpenAPI's styles do not define: a list or an object of anything but
        strings, numbers and booleans."""
        shape = self._schemas.resolve(raw)
        if not isinstance(shape, dict):
            return
        inner: list[JsonValue] = []
        if _is(shape, "array"):
            inner.append(shape.get("items"))
        if _is(shape, "object"):
            inner += list(self._schemas.properties(shape).values())
            inner.append(shape.get("additionalProperties"))
        for one in inner:
            resolved = self._schemas.resolve(one)
            if _is(resolved, "object") or _is(resolved, "array"):
                raise Unreadable("object_parameter", f"{what} holds lists or objects")

    def _body(self, value: JsonValue) -> _Body | None:
        if value is None:
            return None
        body = self._follow(value, "requestBodies", "request body")
        content = body.get("content")
        if not isinstance(content, dict):
            raise Unreadable(
                "invalid",
                f"the request body's content is {kind(content)}, not a map of media types",
            )
        if not content:
            # A map naming no media type: nothing says what a body would be, so none is sent.
            return None
        required = body.get("required") is True
        description = body.get("description")
        media = _json_media(list(content))
        if media is not None:
            schema, refs = self._schemas.schema(_entry(content, media).get("schema", {}))
            essence = _essence(media)
            return _Body(
                schema=_described(schema, description),
                refs=refs,
                required=required,
                media_type=None if essence == "application/json" else essence,
            )
        essences = {_essence(media): media for media in content}
        for form in (FORM, MULTIPART):
            if form in essences:
                return self._form(form, _entry(content, essences[form]), description, required)
        for essence, media in essences.items():
            raw = _entry(content, media).get("schema")
            shape = self._schemas.resolve(raw) if raw is not None else {}
            if is_media_type(essence, wildcard=True) and (_is_file(shape) or _is_text(shape)):
                return _Body(
                    schema=file_schema(_text(description), named=False),
                    refs=set(),
                    required=required,
                    media_type=essence,
                )
        listed = ", ".join(sorted(content))
        raise Unreadable(
            "body_not_json",
            f"the request body is {listed}: neither JSON, a form, multipart form data nor a file",
        )

    def _form(
        self, media_type: str, entry: JsonObject, description: JsonValue, required: bool
    ) -> _Body:
        """A form's or multipart form data's body: an object, a field for each property, and
        each file field a file the model gives (multipart only)."""
        raw = entry.get("schema", {})
        shape = self._schemas.resolve(raw)
        shape = shape if isinstance(shape, dict) else {}
        properties = self._schemas.properties(shape)
        given = entry.get("encoding")
        given = given if isinstance(given, dict) else {}
        encoding: dict[str, Encoding] = {}
        fields: JsonObject = {}
        for field, item in properties.items():
            options = given.get(field)
            options = options if isinstance(options, dict) else {}
            resolved = self._schemas.resolve(item)
            if media_type == FORM:
                self._flat(item, f"form field {field!r}")
                style, explode = options.get("style"), options.get("explode")
                problem = style_problem("query", style, explode)
                if problem is not None:
                    raise Unreadable("parameter_style", f"form field {field!r}: {problem}")
                style = None if style == "form" else style
                explode = None if explode == (style in (None, "form")) else explode
                if style is not None or explode is not None:
                    encoding[field] = Encoding(style=style, explode=explode)  # type: ignore[arg-type]
                fields[field] = item
                continue
            content_type = options.get("contentType")
            # A list of types ("image/png, image/jpeg") leaves the choice to the model's file.
            single = content_type if is_media_type(content_type, wildcard=True) else None
            items = (
                self._schemas.resolve(resolved.get("items"))
                if isinstance(resolved, dict) and _is(resolved, "array")
                else None
            )
            if _is_file(resolved) or (items is not None and _is_file(items)):
                note = _text(resolved.get("description")) if isinstance(resolved, dict) else None
                one = file_schema(note)
                fields[field] = {"type": "array", "items": one} if items is not None else one
                encoding[field] = Encoding(content_type=single, file=True)
            else:
                fields[field] = item
                if single is not None:
                    encoding[field] = Encoding(content_type=single)
        # The object the model gives: the document's own schema, its file fields made files.
        source: JsonObject = {k: v for k, v in shape.items() if k not in ("$ref", "properties")}
        source["type"] = "object"
        if properties:
            source["properties"] = fields
        schema, refs = self._schemas.schema(source)
        return _Body(
            schema=_described(schema, description),
            refs=refs,
            required=required,
            media_type=media_type,
            encoding=encoding,
        )


@attrs.frozen(kw_only=True)
class _Body:
    schema: JsonValue
    refs: set[str]
    required: bool
    media_type: str | None
    encoding: dict[str, Encoding] = attrs.field(factory=dict)


def _entry(content: JsonObject, media: str) -> JsonObject:
    entry = content[media]
    return entry if isinstance(entry, dict) else {}


def _essence(media: str) -> str:
    return media.split(";", 1)[0].strip().lower()


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _is_file(schema: JsonValue) -> bool:
    # A string of bytes: OpenAPI 3.0's format binary, or 3.1's content keywords without base64.
    if not isinstance(schema, dict) or schema.get("type", "string") != "string":
        return False
    if schema.get("format") == "binary" or schema.get("contentEncoding") == "binary":
        return True
    return "contentMediaType" in schema and "contentEncoding" not in schema


def _is_text(schema: JsonValue) -> bool:
    return isinstance(schema, dict) and (schema.get("type") == "string" or not schema)


def _param(parameter: JsonObject) -> Param:
    # A style or explode that is the place's default is left out, as a template written by hand
    # would leave it.
    where = str(parameter["in"])
    style = parameter.get("style")
    style = None if style == _DEFAULT_STYLE[where] else style
    explode = parameter.get("explode")
    explode = (
        None if explode == (parameter.get("style", _DEFAULT_STYLE[where]) == "form") else explode
    )
    return Param(location=where, name=str(parameter["name"]), style=style, explode=explode)  # type: ignore[arg-type]


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
    for media in types:
        if _essence(media) == "application/json":
            return media
    for media in types:
        if _essence(media).endswith(("+json", "/json")):
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


def _keywords(value: JsonObject, path: str) -> tuple[str, ...]:
    # What a search may find an operation by beyond its name and description: its path's
    # words and its tags (the document's groups, "Playlists"), never shown to the model.
    tags = value.get("tags")
    named = [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []
    return (path, *named)


def _hints(method: str) -> Annotations:
    # What HTTP says of a method, and nothing guessed beyond it.
    if method in _SAFE:
        return Annotations(read_only=True)
    if method in ("POST", "PATCH"):
        return Annotations(idempotent=False)
    if method == "DELETE":
        return Annotations(destructive=True)
    return Annotations()
