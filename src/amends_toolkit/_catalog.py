"""The catalog's JSON: definitions, operations and decisions as data a host stores.

One private ``cattrs`` converter writes camelCase keys and leaves out a hint the source did not
give; reading refuses an unknown key or a value of the wrong type with a :class:`CatalogError`
that names it. Modules above this one (HTTP operations) register their classes with
:func:`register`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast, get_args, get_origin, overload

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.v import format_exception

from amends_toolkit._definitions import Annotations, Decision, ToolDefinition
from amends_toolkit._errors import CatalogError
from amends_toolkit._json import kind

if TYPE_CHECKING:
    from collections.abc import Callable

    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("dump", "load", "register")

T = TypeVar("T")

_converter = cattrs.Converter(forbid_extra_keys=True)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _json_object(value: object, _type: object) -> JsonObject:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return cast("JsonObject", value)


def _strict(kind: type) -> Callable[[object, object], Any]:
    # cattrs would turn 1 into "1" or True; a stored catalog must say what it means.
    def structure(value: object, _type: object) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return structure


for _kind in (str, int, float, bool):
    _converter.register_structure_hook(_kind, _strict(_kind))


def _decision(value: object, _type: object) -> Decision:
    if value not in get_args(Decision):
        raise ValueError(f"expected one of allow, approve, block, got {value!r}")
    return cast("Decision", value)


_converter.register_structure_hook_func(lambda kind: kind == Decision, _decision)


# Attribute name -> its key in the stored JSON, for naming the key at fault in an error.
_KEYS: dict[str, str] = {}


def _default(field: Any) -> Any:
    default = field.default
    return default.factory() if hasattr(default, "factory") else default


def register(
    cls: type[Any], *, omit_none: bool = False, omit_default: tuple[str, ...] = (), **overrides: Any
) -> None:
    """Teach the catalog an attrs class: camelCase keys, extra keys refused.

    ``omit_none`` leaves out attributes that are ``None`` (hints a source did not give, so that a
    reader's default applies); ``omit_default`` names attributes left out when they equal their
    default (options added later, so that older catalog JSON is written as it was).
    ``overrides`` are cattrs ``override(...)`` values by attribute name, for keys or hooks of
    their own.
    """
    fields = {
        field.name: overrides.get(field.name, override(rename=_camel(field.name)))
        for field in cls.__attrs_attrs__
    }
    _KEYS.update({name: spec.rename for name, spec in fields.items() if spec.rename})
    unstructure = make_dict_unstructure_fn(cls, _converter, **fields)
    defaults = {
        fields[field.name].rename or field.name: _converter.unstructure(_default(field))
        for field in cls.__attrs_attrs__
        if field.name in omit_default
    }
    if omit_none or defaults:
        base = unstructure

        def unstructure(value: Any) -> dict[str, Any]:
            return {
                key: item
                for key, item in base(value).items()
                if not (omit_none and item is None)
                and not (key in defaults and item == defaults[key])
            }

    _converter.register_unstructure_hook(cls, unstructure)
    structure = make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True, **fields)

    def structure_object(value: object, type_: type[Any]) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected a JSON object, got {kind(value)}")
        return structure(value, type_)

    _converter.register_structure_hook(cls, structure_object)


register(Annotations, omit_none=True)
register(
    ToolDefinition,
    omit_default=("keywords",),
    input_schema=override(rename="inputSchema", struct_hook=_json_object),
)


def dump(value: object) -> JsonValue:
    """The catalog JSON of a definition, an operation, a decision, or a list or dict of them.

    The result is JSON data (dicts and lists), not text; an input schema is kept exactly as the
    source gave it.
    """
    if isinstance(value, (list, tuple)):
        return [dump(item) for item in value]
    if isinstance(value, dict):
        return {str(key): dump(item) for key, item in value.items()}
    return cast("JsonValue", _converter.unstructure(value))


@overload
def load(cls: type[T], data: object) -> T: ...
@overload
def load(cls: object, data: object) -> object: ...
def load(cls: object, data: object) -> object:
    """Read catalog JSON back as ``cls`` (``at.ToolDefinition``, ``list[at.ToolDefinition]``,
    ``at.http.Operation``, ``at.Decision`` ...).

    Raises:
        CatalogError: an unknown key, a missing key or a value of the wrong type, named by its
            path in the data (``$.annotations.readOnly``).
    """
    name = _name(cls)
    if hasattr(cls, "__attrs_attrs__") and not isinstance(data, dict):
        raise CatalogError(f"cannot read {name}: expected a JSON object, got {kind(data)}")
    origin = get_origin(cls)
    if isinstance(origin, type) and issubclass(origin, Sequence) and not isinstance(data, list):
        one = _name(get_args(cls)[0]) if get_args(cls) else "one value"
        raise CatalogError(
            f"cannot read {name}: expected a JSON array, got {kind(data)}"
            + (
                f"; to read one, use at.catalog.load(at.{one}, data)"
                if isinstance(data, dict)
                else ""
            )
        )
    try:
        return _converter.structure(data, cast("type[object]", cls))
    except cattrs.BaseValidationError as error:
        lines = cattrs.transform_error(error, format_exception=_explain)
        details = "; ".join(_json_path(line) for line in lines)
    except (TypeError, ValueError, KeyError) as error:
        details = str(error)
    raise CatalogError(f"cannot read {name}: {details}")


def _name(cls: object) -> str:
    """How a message names what it reads: ``ToolDefinition``, ``list[ToolDefinition]``."""
    if cls is Decision:
        return "Decision"
    args = get_args(cls)
    if args and get_origin(cls) is not None:
        return f"{_name(get_origin(cls))}[{', '.join(_name(arg) for arg in args)}]"
    return str(getattr(cls, "__name__", repr(cls)))


def _explain(error: BaseException, type_: type | None) -> str:
    # A class's own check (a path that its parameters do not match) says more than its type.
    if isinstance(error, ValueError) and str(error):
        return f"invalid value ({error})"
    return format_exception(error, type_)


def _json_path(line: str) -> str:
    # cattrs names attributes; the stored JSON, and so its reader, knows their keys.
    message, _, path = line.rpartition(" @ ")
    parts = re.split(r"(\[[^\]]*\])", path)
    named = [
        part if part.startswith("[") else re.sub(r"\w+", lambda m: _KEYS.get(m[0], m[0]), part)
        for part in parts
    ]
    return f"{message} @ {''.join(named)}"
