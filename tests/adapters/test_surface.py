from __future__ import annotations

import subprocess
import sys

import pytest

import amends_toolkit
import amends_toolkit as at
from amends_toolkit import adapters, runtime


def test_the_adapters_namespace_is_pinned() -> None:
    assert at.adapters is adapters
    assert adapters.__all__ == (
        "AlreadyDecided",
        "ApprovalStore",
        "Approvals",
        "Authenticator",
        "Caller",
        "MemoryApprovalStore",
        "PendingApproval",
        "Refused",
        "SQLiteApprovalStore",
        "ToolCaller",
        "UnknownApproval",
        "anthropic_tools",
        "ask_client",
        "caller_of",
        "client_can_be_asked",
        "mcp_server",
        "openai_responses_tools",
        "openai_tools",
        "run_anthropic_tool_uses",
        "run_openai_function_calls",
        "run_openai_tool_calls",
    )


def test_a_frameworks_module_is_imported_when_first_read() -> None:
    code = (
        "import sys; import amends_toolkit as at;"
        "assert 'amends_toolkit.adapters.openai_agents' not in sys.modules;"
        "assert 'agents' not in sys.modules and 'langchain_core' not in sys.modules;"
        "print(at.adapters.openai_agents.tools.__module__, at.adapters.langchain.tools.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [
        "amends_toolkit.adapters.openai_agents",
        "amends_toolkit.adapters.langchain",
    ]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = adapters.nothing  # type: ignore[attr-defined]


def test_the_toolkit_names_are_host_facing() -> None:
    names = {"Member", "Session", "Tool", "ToolEntry", "ToolResult", "Toolkit", "assemble"}
    assert names | {"source_toolkit", "adapters"} <= set(amends_toolkit.__all__)
    assert names | {"ToolHandler", "source_toolkit"} <= set(runtime.__all__)
    assert at.Toolkit is runtime.Toolkit


def test_a_toolkit_and_a_session_both_run_model_calls() -> None:
    toolkit = at.assemble([], lambda _, __: "allow")
    assert isinstance(toolkit, adapters.ToolCaller)
    assert isinstance(at.Session(toolkit, approve=lambda _, __: True), adapters.ToolCaller)
