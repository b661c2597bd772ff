"""A missing extra says which, and the ``pip install`` line that adds it (as reading YAML without
PyYAML does), rather than a bare ``No module named ...``.

Each test hides the extra's package (``None`` in ``sys.modules`` makes its import fail as if it
were not installed) and forgets the module that imports it, both restored afterwards.
"""

from __future__ import annotations

import importlib
import sys

import pytest

import amends_toolkit as at
from amends_toolkit._extras import _CLONE as CLONE
from amends_toolkit._extras import missing_extra


def hide(monkeypatch: pytest.MonkeyPatch, missing: str, *importers: str) -> None:
    for name in [name for name in sys.modules if name.startswith(f"{missing}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)
    for name in importers:
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_serving_over_mcp_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "mcp_types", "amends_toolkit.adapters.mcp_front")
    toolkit = at.assemble([], lambda source, definition: "allow")
    with pytest.raises(ModuleNotFoundError) as caught:
        at.adapters.mcp_server(toolkit, name="host-tools")
    assert str(caught.value) == (
        "at.adapters.mcp_server needs the 'mcp-server' extra (mcp_types is not installed): "
        f"pip install -e '{CLONE}[mcp-server]'"
    )
    assert caught.value.name == "mcp_types"


def test_the_pydantic_ai_toolset_without_pydantic_ai_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide(monkeypatch, "pydantic_ai", "amends_toolkit.adapters.pydantic_ai")
    with pytest.raises(ModuleNotFoundError) as caught:
        importlib.import_module("amends_toolkit.adapters.pydantic_ai")
    assert str(caught.value) == (
        "amends_toolkit.adapters.pydantic_ai needs the 'pydantic-ai' extra (pydantic_ai is not "
        f"installed): pip install -e '{CLONE}[pydantic-ai]'"
    )


@pytest.mark.parametrize(
    ("module", "extra", "missing"),
    [
        ("openai_agents", "openai-agents", "agents"),
        ("langchain", "langchain", "langchain_core"),
        ("langchain", "langchain", "langgraph"),
    ],
)
def test_a_frameworks_tools_without_its_packages_name_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, extra: str, missing: str
) -> None:
    hide(monkeypatch, missing, f"amends_toolkit.adapters.{module}")
    # at.adapters imports it when the name is first read.
    monkeypatch.delitem(vars(at.adapters), module, raising=False)
    with pytest.raises(ModuleNotFoundError) as caught:
        getattr(at.adapters, module)
    assert str(caught.value) == (
        f"amends_toolkit.adapters.{module} needs the {extra!r} extra ({missing} is not "
        f"installed): pip install -e '{CLONE}[{extra}]'"
    )


@pytest.mark.anyio
async def test_monty_without_its_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "pydantic_monty")
    with pytest.raises(ModuleNotFoundError) as caught:
        async with at.MontyRuntime():
            pass
    assert str(caught.value) == (
        "at.MontyRuntime needs the 'monty' extra (pydantic_monty is not installed): "
        f"pip install -e '{CLONE}[monty]'"
    )


def test_a_missing_module_that_is_not_the_extras_is_left_as_it_is() -> None:
    error = ModuleNotFoundError("No module named 'something_else'", name="something_else")
    assert missing_extra(error, extra="monty", modules=("pydantic_monty",), needed_by="x") is error


@pytest.mark.parametrize("missing", ["numpy", "wordllama"])
def test_the_hybrid_ranker_without_its_packages_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    if missing == "wordllama":
        monkeypatch.delitem(sys.modules, "wordllama", raising=False)
    hide(monkeypatch, missing)
    with pytest.raises(ModuleNotFoundError) as caught:
        at.presentation.HybridRanker.with_wordllama([])
    assert str(caught.value) == (
        f"at.presentation.HybridRanker needs the 'embeddings' extra ({missing} is not installed): "
        f"pip install -e '{CLONE}[embeddings]'"
    )


def test_a_yaml_document_without_pyyaml_names_the_extra_as_every_extra_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # issue 32: its line read pip install -e './amends-toolkit[yaml]' (the docs' placeholder),
    # where every other extra's names the clone the library was installed from
    hide(monkeypatch, "yaml")
    with pytest.raises(at.openapi.DocumentError) as caught:
        at.openapi.parse_document("openapi: 3.0.0\n")
    assert str(caught.value) == (
        "the document is not JSON, and reading YAML needs the 'yaml' extra (yaml is not "
        f"installed): pip install -e '{CLONE}[yaml]'"
    )
