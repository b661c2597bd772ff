"""A pydantic-ai toolset over a toolkit, so a pydantic-ai agent uses an assembled toolkit unchanged.

Needs the ``pydantic-ai`` extra (``pip install amends-toolkit[pydantic-ai]``)::

    from pydantic_ai import Agent
    from amends_toolkit.adapters.pydantic_ai import ToolkitToolset

    agent = Agent(model, toolsets=[ToolkitToolset(session)])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from amends_toolkit.runtime import Session, Toolkit

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from amends_toolkit._json import JsonValue

__all__ = ("ToolkitToolset",)

# The toolkit checks each input against the tool's schema and answers a refusal as a result the
# model reads, so pydantic-ai only parses the arguments.
_ANY_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema()))


class ToolkitToolset(AbstractToolset[AgentDepsT]):
    """The tools of a :class:`~amends_toolkit.Toolkit`, or of a :class:`~amends_toolkit.Session`,
    as a pydantic-ai toolset.

    Args:
        caller: A session runs each call as the harness does: it asks its ``approve`` before a
            tool that needs approval, shows errors to its ``on_error`` and applies its timeout.
            A bare toolkit leaves approval to pydantic-ai: a call of a tool that needs approval
            raises ``ApprovalRequired`` until the run approves it, so the run ends with
            ``DeferredToolRequests`` and resumes with ``DeferredToolResults``.
        id: The toolset's id among an agent's toolsets.
        max_retries: How often pydantic-ai may ask the model again for arguments it cannot parse.

    Every tool is declared with ``strict=False``. A failure (a refused input, a source's error,
    a defect) is a result the model reads, never an exception of the run; cancelling the run
    cancels the calls.
    """

    def __init__(
        self, caller: Toolkit | Session, *, id: str | None = None, max_retries: int = 1
    ) -> None:
        self._caller = caller
        self._toolkit = caller.toolkit if isinstance(caller, Session) else caller
        self._id = id
        self._max_retries = max_retries
        self._definitions = [
            ToolDefinition(
                name=tool.name,
                description=tool.description,
                parameters_json_schema=tool.input_schema,
                strict=False,
            )
            for tool in self._toolkit.tools.values()
        ]

    @property
    def id(self) -> str | None:
        """The toolset's id, as given."""
        return self._id

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """Every tool of the toolkit, in its order."""
        return {
            definition.name: ToolsetTool(
                toolset=self,
                tool_def=definition,
                max_retries=self._max_retries,
                args_validator=_ANY_OBJECT,
            )
            for definition in self._definitions
        }

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> JsonValue:
        """Run the tool through the session or the toolkit; a failure is the result.

        Raises:
            ApprovalRequired: over a bare toolkit, the tool needs approval and the run has not
                approved this call.
        """
        if (
            isinstance(self._caller, Toolkit)
            and not ctx.tool_call_approved
            and name in self._toolkit
        ):
            entry = self._toolkit.entry(name)
            if entry.check(tool_args) is None and entry.tool.requires_approval(tool_args):
                raise ApprovalRequired
        if isinstance(self._caller, Toolkit):
            # The run approved it (pydantic-ai asked), or it needs no approval.
            return await self._caller.call(name, tool_args, approved=ctx.tool_call_approved)
        return await self._caller.call(name, tool_args)
