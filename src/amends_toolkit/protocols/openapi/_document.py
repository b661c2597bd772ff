"""Reading an OpenAPI document from YAML or JSON text, or a file, into JSON values.

YAML is read with PyYAML's safe loader (the ``yaml`` extra), as JSON would have it: an unquoted
date stays a string, a key that YAML reads as a number or a boolean is a string again, and an
alias that contains itself is refused. Nothing is fetched.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from amends_toolkit.protocols.openapi._reader import DocumentError

if TYPE_CHECKING:
    import os

    from amends_toolkit._json import JsonValue

__all__ = ("parse_document", "read_document")


def read_document(path: str | os.PathLike[str]) -> JsonValue:
    """The JSON value of a YAML or JSON file.

    Raises:
        OSError: the file cannot be read.
        DocumentError: the file is neither JSON nor YAML (or YAML without PyYAML installed).
    """
    with open(path, "rb") as file:
        return parse_document(file.read())


def parse_document(text: str | bytes) -> JsonValue:
    """The JSON value of YAML or JSON text (JSON is YAML too, but read faster as JSON).

    Raises:
        DocumentError: the text is neither JSON nor YAML, or is YAML and PyYAML is not
            installed (``pip install 'amends-toolkit[yaml]'``).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise DocumentError(f"the document is not UTF-8 text: {error}") from None
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        pass
    else:
        return value
    try:
        import yaml
    except ImportError:
        raise DocumentError(
            "the document is not JSON, and reading YAML needs PyYAML: "
            "pip install 'amends-toolkit[yaml]'"
        ) from None
    try:
        loaded = yaml.load(text, Loader=_loader(yaml))
    except (yaml.YAMLError, RecursionError) as error:
        raise DocumentError(f"the document is neither JSON nor YAML: {error}") from None
    return _json(loaded, ())


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


def _json(value: object, path: tuple[int, ...]) -> JsonValue:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if id(value) in path:
        raise DocumentError("the YAML has an alias that contains itself")
    if len(path) > 500:
        raise DocumentError("the YAML is nested more than 500 levels deep")
    inner = (*path, id(value))
    if isinstance(value, dict):
        return {_key(key): _json(item, inner) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json(item, inner) for item in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    return str(key)
