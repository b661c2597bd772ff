"""What the two MCP sources (Streamable HTTP in ``_mcp``, stdio in ``_mcp_stdio``) share.

The bound over an operation, the error of a source that is not running, the holder's own
exception raised as itself out of a lifespan, the check of the version a server answered
``initialize`` with, and the reasons a call's result becomes: one place each, so the two
transports cannot drift apart in what they tell a host or a model.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import anyio

from amends_toolkit._errors import CallFailedError, UnsupportedError
from amends_toolkit.actors._mcp_errors import WIRE_ERRORS, wire_error
from amends_toolkit.protocols.mcp._jsonrpc import SESSION_VERSIONS
from amends_toolkit.runtime._deadlines import timed_out

if TYPE_CHECKING:
    from collections.abc import Awaitable, Iterator

    from anyio.abc import TaskGroup

    from amends_toolkit._json import JsonObject
    from amends_toolkit.protocols.mcp._results import ToolFailed

__all__ = (
    "Holder",
    "asked_input",
    "bounded",
    "not_running",
    "raised_as_itself",
    "session_version",
    "tool_failed",
)

_T = TypeVar("_T")


async def bounded(name: str, seconds: float, method: str, operation: Awaitable[_T]) -> _T:
    """Run an operation within ``seconds`` (the source's ``timeout``), its failures as reasons.

    One deadline over the whole operation: a server's keep-alive comments reset the client's
    read timeout, so they cannot stand in for it. The operation is given as the coroutine it
    is, not a function that makes it: a call in flight holds no closure.
    """
    with anyio.move_on_after(seconds):
        try:
            return await operation
        except WIRE_ERRORS as error:
            raise wire_error(name, error, method=method) from None
    raise timed_out(name, method, "source's timeout", seconds)


def not_running(kind: str, name: str) -> RuntimeError:
    """The error of a source used while no actor runs it (``kind`` names its transport)."""
    return RuntimeError(
        f"the {kind} source {name!r} is not running: spawn it on an at.Runtime "
        "(or hold `async with source.lifespan():` around its use)"
    )


class Holder:
    """The holder's own exception of a lifespan, kept (see :func:`raised_as_itself`)."""

    def __init__(self) -> None:
        self.raised: Exception | None = None

    @contextmanager
    def hold(self, tasks: TaskGroup) -> Iterator[None]:
        """Around a lifespan's ``yield``: keeps the holder's own exception (cancellation goes
        on through), and at the end, however it ends, cancels the lifespan's ``tasks``."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 - the holder's own: raised_as_itself raises it
            self.raised = error
        finally:
            tasks.cancel_scope.cancel()


@contextmanager
def raised_as_itself() -> Iterator[Holder]:
    """Around a source's lifespan, whose ``yield`` is held inside task groups: the holder's own
    exception is raised as itself once they have ended, not wrapped in an exception group of
    theirs, so ``except UnavailableError`` around the block sees it.

    Hold the ``yield`` in the :meth:`Holder.hold` of the holder it gives. When the task groups
    raise (a task of theirs failed, the process ended), that is what is raised.
    """
    holder = Holder()
    yield holder
    if holder.raised is not None:
        raise holder.raised


def session_version(name: str, result: JsonObject) -> str:
    """The version a server's ``initialize`` result names, if the source speaks it.

    Raises:
        UnsupportedError: a version the source does not speak, or none.
    """
    version = result.get("protocolVersion")
    if not isinstance(version, str) or version not in SESSION_VERSIONS:
        raise UnsupportedError(
            source=name, message=f"the server answered initialize with the version {version!r}"
        )
    return version


def tool_failed(name: str, failed: ToolFailed) -> CallFailedError:
    """The reason of a tool that ran and said it failed (``isError``), in its own words."""
    return CallFailedError(source=name, message=failed.text)


def asked_input(name: str, tool: str) -> UnsupportedError:
    """The reason of a tool that asked for input first (``input_required``): no source asks."""
    return UnsupportedError(source=name, message=f"{tool} asked for input (input_required)")
