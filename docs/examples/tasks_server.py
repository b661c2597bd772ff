"""An MCP server over stdio that the examples start as a subprocess: a short list of tasks.

It is the official SDK's server (the ``mcp`` package, in the ``mcp-server`` and ``gateway``
extras); any MCP server over stdio would do.
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("tasks")
TASKS = ["Water the plants", "Buy bread"]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def list_tasks() -> list[str]:
    """List the tasks."""
    return TASKS


@server.tool(annotations=ToolAnnotations(idempotent_hint=False))
def add_task(title: str) -> str:
    """Add a task to the list."""
    TASKS.append(title)
    return f"added {title!r}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_task(task_id: int) -> str:
    """Delete a task for good."""
    if not 1 <= task_id <= len(TASKS):
        raise ToolError(f"there is no task {task_id}")
    return f"deleted task {task_id}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def weekly_report(ctx: Context) -> str:
    """Write the week's report, saying how far it has got."""
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"section {step} of 3")
    return "All tasks on time."


if __name__ == "__main__":
    server.run("stdio")
