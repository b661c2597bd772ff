"""The bench catalog: the tools the library's OpenAPI reader gives for the real OpenAPI documents
of the corpus, each named ``<doc>__<the reader's name>`` as an assembly prefixes it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

import attrs
import yaml

import amends_toolkit as at
from amends_toolkit.protocols.openapi._reader import _tool_name
from amends_toolkit.runtime import Tool

if TYPE_CHECKING:
    from amends_toolkit._json import JsonValue

_HERE = Path(__file__).resolve().parent
_CORPUS = _HERE.parent.parent / "tests" / "data" / "openapi-corpus"

# file -> the short name that prefixes its tools. Left out: the Swagger 2.0 petstore (not
# OpenAPI 3), the webhook example (no paths), and DigitalOcean's root file, whose operations are
# all external $refs with no summary to search.
DOCUMENTS = {
    "adyen-management-v3-3.1.json": "adyen_management",
    "adyen-terminal-api-v1-3.1.json": "adyen_terminal",
    "box-3.0.json": "box",
    "callback-example-3.0.yaml": "callback_example",
    "camara-quality-on-demand-3.0.yaml": "camara_qod",
    "discord-3.1.json": "discord",
    "meilisearch-v1.4-3.1.yaml": "meilisearch",
    "openai-3.1.yaml": "openai",
    "parameters-style-3.1.yaml": "parameters_style",
    "petstore-3.0.yaml": "petstore",
    "qdrant-3.0.json": "qdrant",
    "spotify-3.0.yaml": "spotify",
    "stapi-star-trek-3.0.yaml": "stapi",
    "temporal-3.0.yaml": "temporal",
    "tictactoe-3.1.yaml": "tictactoe",
    "twilio-messaging-v1-3.0.yaml": "twilio",
    "uspto-3.0.json": "uspto",
}


def corpus_dir() -> Path:
    """The corpus, as the repository holds it."""
    if not (_CORPUS / "manifest.json").is_file():
        raise SystemExit(f"no OpenAPI corpus at {_CORPUS}")
    return _CORPUS


def _load(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


@attrs.frozen(kw_only=True)
class Catalog:
    """The tools the library's OpenAPI reader gives for the documents, and the operations it
    skips, named as the reader would name them, so that a query may ask for one (it is then
    counted over all queries, and left out of the figures over the kept ones)."""

    tools: list[Tool]
    skipped: dict[str, str]  # tool name -> the reader's reason


def read() -> Catalog:
    """The catalog through ``at.openapi.read_operations``: each tool named
    ``<doc>__<reader's name>`` as an assembly would prefix it, with its input schema, its
    annotations and its keywords (its path and tags), as an assembly gives them."""
    folder = corpus_dir()
    tools: list[Tool] = []
    skipped: dict[str, str] = {}
    for file, short in DOCUMENTS.items():
        result = at.openapi.read_operations(cast("JsonValue", _load(folder / file)))
        for operation in result.operations:
            definition = operation.definition
            tools.append(
                Tool(
                    name=f"{short}__{definition.name}",
                    description=definition.description,
                    input_schema=definition.input_schema,
                    annotations=definition.annotations,
                    keywords=definition.keywords,
                )
            )
        for skip in result.skipped:
            if skip.method is not None and skip.reason != "duplicate_name":
                name = _tool_name(skip.operation_id, skip.method, skip.path)
                skipped.setdefault(f"{short}__{name}", skip.reason)
    return Catalog(tools=tools, skipped=skipped)
