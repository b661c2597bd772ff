"""A pydantic-ai toolset over a toolkit, so a pydantic-ai agent uses an assembled toolkit unchanged.

Needs the ``pydantic-ai`` extra (from the clone's parent folder:
``pip install -e './amends-toolkit[pydantic-ai]'``)::

    from pydantic_ai import Agent
    from amends_toolkit.adapters.pydantic_ai import ToolkitToolset

    agent = Agent(model, toolsets=[ToolkitToolset(session)])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from amends_toolkit._content import Text, content_parts
from amends_toolkit._extras import missing_extra
from amends_toolkit.adapters._calls import needs_approval, with_source_names
from amends_toolkit.adapters._schemas import model_schema
from amends_toolkit.runtime import Session, Toolkit

try:
    from pydantic_ai.exceptions import ApprovalRequired
    from pydantic_ai.messages import BinaryContent
    from pydantic_ai.tools import AgentDepsT, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ModuleNotFoundError as error:
    raise missing_extra(
        error,
        extra="pydantic-ai",
        modules=("pydantic_ai", "pydantic_core"),
        needed_by="amends_toolkit.adapters.pydantic_ai",
    ) from error

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
    cancels the calls. A result of MCP content blocks (:mod:`amends_toolkit._content`) is a list
    of its texts and of ``BinaryContent`` for its images, sounds and files, which pydantic-ai
    gives each model in the model's own form.
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
                parameters_json_schema=model_schema(tool.input_schema),
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
    ) -> JsonValue | list[str | BinaryContent]:
        """Run the tool through the session or the toolkit; a failure is the result.

        Raises:
            ApprovalRequired: over a bare toolkit, the tool needs approval and the run has not
                approved this call.
        """
        input = with_source_names(self._caller, name, tool_args)
        if isinstance(self._caller, Toolkit):
            if not ctx.tool_call_approved and needs_approval(self._toolkit, name, input):
                raise ApprovalRequired
            # The run approved it (pydantic-ai asked), or it needs no approval.
            value = await self._caller.call(name, input, approved=ctx.tool_call_approved)
        else:
            value = await self._caller.call(name, input)
        parts = content_parts(value)
        if parts is None:
            return value
        return [
            part.text
            if isinstance(part, Text)
            else BinaryContent(data=part.decoded(), media_type=part.mime_type)
            for part in parts
        ]
