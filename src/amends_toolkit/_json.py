"""JSON value types: what a tool takes and what it answers."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""Any JSON value as Python reads it with :func:`json.loads`."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: a tool's input, a schema."""

JsonInput: TypeAlias = (
    bool | int | float | str | Sequence["JsonInput"] | Mapping[str, "JsonInput"] | None
)
"""A tool's input as a host gives it: JSON in read-only (covariant) containers, so that a
``dict[str, str]`` or a ``dict[str, list[int]]`` is one, where a :data:`JsonObject` is not."""


def kind(value: object) -> str:
    """What a JSON value is, as a message says it: ``"a string"``, ``"an array"``, ``"null"``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


MAX_DEPTH = 128
"""How deep JSON from outside (an input, an answer, a document) may nest, by default.

Real inputs, answers and OpenAPI documents nest a few dozen levels at most; far deeper JSON
only breaks a parser or a validator (jsonschema-rs gives up past 255 levels).
"""


class JsonRefused(ValueError):
    """JSON text or a value that is refused: not JSON, nested too deep, or NaN or Infinity."""


class JsonTooDeep(JsonRefused):
    """JSON text that nests more levels than allowed."""


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> JsonValue:
    """JSON text as a value, with no NaN or Infinity and at most ``max_depth`` levels of nesting.

    Linear in the text: C's parser (which refuses ``NaN``, ``Infinity`` and a number too large
    for a float), then, only for a text with more than ``max_depth`` brackets (a text nests no
    deeper than it has ``[`` and ``{``), one walk over the containers it made.

    Raises:
        JsonRefused: the text is not JSON (``NaN`` and ``Infinity`` are not), or nests deeper.
    """
    try:
        if isinstance(text, bytes):
            text = (text[3:] if text.startswith(_BOM) else text).decode()
        value: JsonValue = _DECODER.decode(text)
    except RecursionError:
        raise JsonTooDeep(f"the JSON nests more than {max_depth} levels") from None
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        raise JsonRefused(f"the text is not JSON ({error})") from None
    if text.count("[") + text.count("{") > max_depth:
        problem = refusal(value, max_depth=max_depth)
        if problem is not None:
            # A parsed value holds no NaN (the parser refused it): the problem is its depth.
            raise JsonTooDeep(f"the JSON {problem}")
    return value


def refusal(value: object, *, max_depth: int = MAX_DEPTH, only_json: bool = False) -> str | None:
    """What makes a value no JSON a peer may be sent, or ``None``: it ``"nests more than N
    levels"`` or ``"holds NaN or Infinity"``, or (``only_json``) it holds a value JSON has not
    (a set, bytes) or a key that is no string.

    A scalar is depth 0, ``[]`` and ``{}`` are depth 1. One walk, level by level, never recursive.
    """
    # Every call's input is walked: a plain scalar is told by its exact type first, and keys
    # are checked in a loop, not a generator (a small input in a third of the time).
    level = [value]
    depth = 0
    while level:
        inner: list[object] = []
        for item in level:
            if type(item) in _PLAIN:
                continue
            if isinstance(item, _CONTAINERS):
                if depth >= max_depth:
                    return f"nests more than {max_depth} levels"
                if isinstance(item, dict):
                    if only_json:
                        for key in item:
                            if not isinstance(key, str):
                                return "has a key that is not a string"
                    inner.extend(item.values())
                else:
                    inner.extend(item)
            elif isinstance(item, float):
                if not math.isfinite(item):
                    return "holds NaN or Infinity"
            elif only_json and not (item is None or isinstance(item, str | int)):
                return f"holds a value JSON has not ({type(item).__name__})"
        level = inner
        depth += 1
    return None


_PLAIN: Final = frozenset({str, int, bool, type(None)})
_CONTAINERS: Final = (dict, list, tuple)


def input_refusal(value: object, *, max_depth: int = MAX_DEPTH) -> str | None:
    """What a model reads of an input no peer may be sent (see :func:`refusal`), or ``None``."""
    if type(value) is dict and max_depth > 0:
        # Most inputs are one object of strings, whole numbers, booleans and nulls under string
        # keys: nothing in them to refuse, told without the walk's levels.
        for key, item in value.items():
            if type(key) is not str or type(item) not in _PLAIN:
                break
        else:
            return None
    problem = refusal(value, max_depth=max_depth, only_json=True)
    return None if problem is None else f"The input {problem}; send plain JSON."


def _constant(name: str) -> JsonValue:
    raise ValueError(f"{name} is not JSON")


def _float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError("a number too large for a float")
    return number


_BOM: Final = b"\xef\xbb\xbf"

# One decoder for every text: json.loads with an option builds a new one each call.
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float)
