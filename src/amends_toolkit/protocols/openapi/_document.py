"""Reading an OpenAPI document from YAML or JSON text, or a file, into JSON values.

YAML is read with PyYAML's safe loader (the ``yaml`` extra), as JSON would have it: an unquoted
date stays a string, a key that YAML reads as a number or a boolean is a string again, and an
alias that contains itself is refused. Nothing is fetched.

A document is a peer's text, bounded before it is expanded: it nests at most ``max_depth``
levels, and YAML's aliases (each a copy of what an anchor names, which nested aliases multiply:
half a kilobyte can ask for billions of nodes) add at most ``max_alias_nodes`` nodes. Both are
measured on the document as read, before any alias is expanded, in time linear in its size.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Final

from amends_toolkit._extras import missing_extra
from amends_toolkit._json import MAX_DEPTH, JsonRefused, JsonTooDeep, loads
from amends_toolkit.protocols.openapi._reader import DocumentError

if TYPE_CHECKING:
    import os

    from amends_toolkit._json import JsonValue

__all__ = ("MAX_ALIAS_NODES", "parse_document", "read_document")

MAX_ALIAS_NODES: Final = 200_000
"""How many nodes YAML aliases may add to a document, by default. The largest real documents
(OpenAI's, with every alias expanded) have about 60,000 nodes in all."""


def read_document(
    path: str | os.PathLike[str],
    *,
    max_depth: int = MAX_DEPTH,
    max_alias_nodes: int = MAX_ALIAS_NODES,
) -> JsonValue:
    """The JSON value of a YAML or JSON file (see :func:`parse_document`).

    Raises:
        OSError: the file cannot be read.
        DocumentError: as :func:`parse_document` says.
    """
    with open(path, "rb") as file:
        return parse_document(file.read(), max_depth=max_depth, max_alias_nodes=max_alias_nodes)


def parse_document(
    text: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    max_alias_nodes: int = MAX_ALIAS_NODES,
) -> JsonValue:
    """The JSON value of YAML or JSON text (JSON is YAML too, but read faster as JSON).

    Args:
        text: The document.
        max_depth: How many levels its values may nest.
        max_alias_nodes: How many nodes its YAML aliases may add, all expanded.

    Raises:
        DocumentError: the text is neither JSON nor YAML, is YAML and PyYAML is not installed
            (the error names the ``yaml`` extra's ``pip install`` line), nests more than ``max_depth`` levels, or
            has aliases that would add more than ``max_alias_nodes`` nodes (or contain
            themselves).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise DocumentError(f"the document is not UTF-8 text: {error}") from None
    if text.lstrip()[:1] in ("{", "["):
        try:
            return loads(text, max_depth=max_depth)
        except JsonTooDeep as error:
            raise DocumentError(f"the document is too deep: {error}") from None
        except JsonRefused:
            pass  # not JSON: YAML, perhaps
    try:
        import yaml
    except ModuleNotFoundError as error:
        missing = missing_extra(error, extra="yaml", modules=("yaml",), needed_by="reading YAML")
        if missing is error:
            raise
        raise DocumentError(f"the document is not JSON, and {missing}") from None
    try:
        loaded = yaml.load(text, Loader=_loader(yaml))
    except (yaml.YAMLError, RecursionError) as error:
        raise DocumentError(f"the document is neither JSON nor YAML: {_one_line(error)}") from None
    try:
        _measure(loaded, max_depth=max_depth, max_alias_nodes=max_alias_nodes)
        return _json(loaded)
    except RecursionError:  # a max_depth raised past what Python's stack follows
        raise DocumentError("the document nests deeper than can be read") from None


def _one_line(error: BaseException) -> str:
    """PyYAML's error as one line, its problem and where it is (its own text is up to four
    lines, each naming the stream ``"<unicode string>"``)."""
    problem, mark = getattr(error, "problem", None), getattr(error, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(error).split())


_LOADER: Any = None


def _loader(yaml: Any) -> Any:
    global _LOADER
    if _LOADER is None:
        # libyaml's parser when PyYAML has it: ten times faster on a document of megabytes.
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class Loader(base):  # type: ignore[misc,valid-type]
            pass

        # JSON has no dates: an unquoted 2024-01-01 stays the string it was written as.
        Loader.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        _LOADER = Loader
    return _LOADER


def _measure(loaded: object, *, max_depth: int, max_alias_nodes: int) -> None:
    """Refuse what YAML read when it nests too deep or its aliases expand too far.

    One walk over the values as read, each once (an alias is the same object as its anchor):
    how deep each nests and how many nodes it holds expanded.

    Raises:
        DocumentError: too deep, too many nodes from aliases, or an alias inside itself.
    """
    measured: dict[int, tuple[int, int]] = {}  # id -> (depth, nodes expanded)
    inside: set[int] = set()
    written = 0  # nodes as written: each container once, with the scalars it holds

    def measure(value: object, level: int) -> tuple[int, int]:
        nonlocal written
        if not isinstance(value, dict | list | tuple | set | frozenset):
            written += 1
            return 0, 1
        key = id(value)
        if key in measured:
            return measured[key]
        if key in inside:
            raise DocumentError("the YAML has an alias that contains itself")
        if level >= max_depth:
            raise DocumentError(f"the document nests more than {max_depth} levels")
        inside.add(key)
        written += 1
        depth, nodes = 0, 1
        for item in value.values() if isinstance(value, dict) else value:
            inner, count = measure(item, level + 1)
            depth, nodes = max(depth, inner), nodes + count
        inside.discard(key)
        measured[key] = (depth + 1, nodes)
        return depth + 1, nodes

    _, expanded = measure(loaded, 0)
    if expanded - written > max_alias_nodes:
        raise DocumentError(
            f"the YAML's aliases would add {expanded - written} nodes, more than "
            f"{max_alias_nodes}; expand them in the document if that is meant"
        )


def _json(value: object) -> JsonValue:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {_key(key): _json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json(item) for item in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    return str(key)
