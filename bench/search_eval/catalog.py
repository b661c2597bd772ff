"""The bench catalog: one tool per operation of the real OpenAPI documents of the corpus.

Read straight from the documents (json / yaml), not through the library's OpenAPI reader, so that
the search bench stands alone. A tool is named ``<doc>__<operationId or method_path>`` and its
description is the operation's summary, then its description.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import yaml

import amends_toolkit as at
from amends_toolkit.protocols.openapi._reader import _tool_name
from amends_toolkit.runtime import Tool

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
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


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


def _slug(text: str) -> str:
    return re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]+", "_", text)).strip("_")


def build() -> list[tuple[str, str]]:
    """``(name, description)`` of each tool, in document and path order; a repeated name (the
    same operationId on several paths) keeps its first operation."""
    folder = corpus_dir()
    tools: list[tuple[str, str]] = []
    seen: set[str] = set()
    for file, short in DOCUMENTS.items():
        document = _load(folder / file)
        paths = document.get("paths") or {}
        assert isinstance(paths, dict)
        for path, item in paths.items():
            if not isinstance(item, dict):
                continue
            for method in _METHODS:
                operation = item.get(method)
                if not isinstance(operation, dict) or "$ref" in operation:
                    continue
                local = operation.get("operationId") or f"{method}_{path}"
                name = f"{short}__{_slug(str(local))}"
                if name in seen:
                    continue
                seen.add(name)
                parts = [
                    str(operation.get(key) or "").strip() for key in ("summary", "description")
                ]
                description = "\n\n".join(part for part in parts if part)
                tools.append((name, description))
    return tools


@attrs.frozen(kw_only=True)
class Catalog:
    """The tools the library's OpenAPI reader gives for the documents, and the operations it
    skips, named as the reader would name them, so that a query may ask for one (it is then
    counted over all queries, and left out of the figures over the kept ones)."""

    tools: list[Tool]
    skipped: dict[str, str]  # tool name -> the reader's reason


def read() -> Catalog:
    """The catalog through ``at.openapi.read_operations``: each tool named
    ``<doc>__<reader's name>`` as an assembly would prefix it, with its input schema."""
    folder = corpus_dir()
    tools: list[Tool] = []
    skipped: dict[str, str] = {}
    for file, short in DOCUMENTS.items():
        result = at.openapi.read_operations(_load(folder / file))
        for operation in result.operations:
            definition = operation.definition
            tools.append(
                Tool(
                    name=f"{short}__{definition.name}",
                    description=definition.description,
                    input_schema=definition.input_schema,
                )
            )
        for skip in result.skipped:
            if skip.method is not None and skip.reason != "duplicate_name":
                name = _tool_name(skip.operation_id, skip.method, skip.path)
                skipped.setdefault(f"{short}__{name}", skip.reason)
    return Catalog(tools=tools, skipped=skipped)
