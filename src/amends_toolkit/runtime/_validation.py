"""Checking a tool's input against its JSON Schema before the source sees it.

A validator is compiled once per definition and cached. A ``pattern`` or a ``format`` is not
checked (the source checks it too, and a pattern from a source is not run here); no ``$ref`` is
ever fetched; a schema that cannot be compiled holds the input only to being an object.

Before the schema, an input is held to being JSON a peer may be sent: no NaN or Infinity, and
nested at most :data:`~amends_toolkit._json.MAX_DEPTH` levels (a validator gives up on deeper
input). What the model reads of a refusal is at most 500 characters, however long the value a
message echoes.
"""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from amends_toolkit._json import input_refusal, kind
from amends_toolkit._log import get_logger
from amends_toolkit._peer import MAX_MODEL_TEXT, cut_middle

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("InputValidator", "validator_for")

_log = get_logger(__name__)
_MAX_ERRORS = 5
_INTRO = "The input does not match the tool's parameters: "


class _Unchecked:
    """A keyword that is read but never run (``pattern``)."""

    def __init__(self, parent: object, value: object, schema: object) -> None:
        pass

    def validate(self, instance: object) -> None:
        pass


class InputValidator:
    """Checks inputs of one tool; build with :func:`validator_for`."""

    __slots__ = ("__weakref__", "_validator")

    def __init__(self, schema: JsonObject, *, tool: str) -> None:
        try:
            self._validator: Any = jsonschema_rs.validator_for(
                schema,
                keywords={"pattern": _Unchecked},
                validate_formats=False,
                offline=True,
            )
        except Exception as error:  # noqa: BLE001 - any schema the library cannot compile
            # The host reads this once in its log; the model is only held to sending an object.
            _log.warning("schema.unchecked", tool=tool, error=str(error).splitlines()[0])
            self._validator = None

    def check(self, input: JsonValue) -> str | None:
        """``None`` when the input fits, else what is wrong, written for the model to fix it."""
        if not isinstance(input, dict):
            return f"The input must be a JSON object, not {kind(input)}."
        refused = input_refusal(input)
        if refused is not None:
            return refused
        if self._validator is None or self._validator.is_valid(input):
            return None
        problems = []
        for error in self._validator.iter_errors(input):
            where = "/".join(str(part) for part in error.instance_path)
            problems.append(f"at '{where}': {error.message}" if where else error.message)
            if len(problems) == _MAX_ERRORS:
                break
        if not problems:
            return None
        # A message echoes the value at fault, which may be the model's megabytes: each is cut
        # in its middle (keeping what it says of the value) to share the one limit.
        room = (MAX_MODEL_TEXT - len(_INTRO) - 1) // len(problems) - 2
        return _INTRO + "; ".join(cut_middle(problem, room) for problem in problems) + "."


_cache: weakref.WeakValueDictionary[str, InputValidator] = weakref.WeakValueDictionary()


def validator_for(schema: JsonObject, *, tool: str = "") -> InputValidator:
    """The validator of a schema, shared by every definition with the same schema."""
    key = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    validator = _cache.get(key)
    if validator is None:
        validator = InputValidator(schema, tool=tool)
        _cache[key] = validator
    return validator
