"""A tool as data, stored as JSON and read back; a stored catalog that is wrong says where."""

from __future__ import annotations

import json

import amends_toolkit as at

get_item = at.ToolDefinition(
    name="get_item",
    description="Get one item of a shop.",
    input_schema={
        "type": "object",
        "properties": {"item_id": {"type": "string"}},
        "required": ["item_id"],
        "additionalProperties": False,
    },
    annotations=at.Annotations(read_only=True),  # the hints a source gave; None where it did not
    keywords=["/items/{id}", "Items"],  # words tool search finds it by, never shown to a model
)

stored = at.catalog.dump([get_item])  # JSON data: camelCase keys, unknown hints left out
print(json.dumps(stored))
assert at.catalog.load(list[at.ToolDefinition], stored) == [get_item]

decisions = at.catalog.load(dict[str, at.Decision], {"get_item": "allow"})  # a policy, stored
print(decisions)

misspelt = json.loads(json.dumps(stored).replace("inputSchema", "inputSchma"))
try:
    at.catalog.load(list[at.ToolDefinition], misspelt)
except at.CatalogError as error:
    print(error)
