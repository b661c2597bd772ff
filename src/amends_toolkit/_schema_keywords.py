"""The JSON Schema (2020-12) keywords whose values are schemas: one table, for every walk.

A walk of a schema (the OpenAPI reader's, the MCP header marks', the adapters' renaming of
property names) enters exactly these, and never instance data (``default``, ``enum``,
``const``, ``examples``):

==========================  =========================================================
keywords                    their value
==========================  =========================================================
:data:`ONE_SCHEMA`          one schema (``items`` of 2020-12; OpenAPI 3.0 allows no list)
:data:`SCHEMA_LISTS`        a list of schemas
:data:`NAMED_SCHEMAS`       an object of schemas keyed by property names (``properties``,
                            and ``dependentSchemas``, whose keys name properties too, so
                            a walk that renames properties renames its keys as well)
:data:`PATTERN_SCHEMAS`     an object of schemas keyed by regular expressions
:data:`DEFINITIONS`         an object of schemas reached only by ``$ref``
==========================  =========================================================
"""

from __future__ import annotations

from typing import Final

__all__ = ("DEFINITIONS", "NAMED_SCHEMAS", "ONE_SCHEMA", "PATTERN_SCHEMAS", "SCHEMA_LISTS")

ONE_SCHEMA: Final = frozenset(
    {
        "items",
        "additionalProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    }
)
SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
NAMED_SCHEMAS: Final = frozenset({"properties", "dependentSchemas"})
PATTERN_SCHEMAS: Final = frozenset({"patternProperties"})
DEFINITIONS: Final = frozenset({"$defs", "definitions"})
