"""The one shape of every tool source."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeGuard, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractAsyncContextManager

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = (
    "Lifespan",
    "NormalExit",
    "ToolSource",
    "has_lifespan",
    "honours_cancellation",
    "is_source",
)


@runtime_checkable
class ToolSource(Protocol):
    """A source of tools: a name, ``discover`` and ``call``.

    Both methods raise :class:`~amends_toolkit.ToolSourceError` (a reason of it) for every failure
    of the source; any other exception is a defect. Cancellation stops the work and propagates.

    A source may declare ``honours_cancellation = True`` (an attribute, usually of its class) when
    its calls, and its lifespan once its actor stops, end soon after they are cancelled, cleanup
    included (a bounded, shielded one): an actor then runs a call in its caller's own task when it
    has room (``Runtime.spawn``'s ``inline``), since no call of it can hold a caller past its
    deadline, and the actor runs in the runtime's task group, which waits for it as the runtime is
    left. Every built-in source declares it; a source without it is served by the actor's
    workers, and its actor runs detached, so that a stop it ignores can leave it behind.
    """

    @property
    def name(self) -> str:
        """The source's name, which prefixes its tools' names in an assembly."""
        ...

    async def discover(self) -> Sequence[ToolDefinition]:
        """Ask the source which tools it has now: the catalog a host stores and refreshes."""
        ...

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        """Run one tool with an input object and return the JSON it answers."""
        ...


@runtime_checkable
class Lifespan(Protocol):
    """A source that holds something while it runs (a process, a session) may implement this.

    The actor enters ``lifespan()`` before it serves a message and leaves it when it stops or
    restarts, so a source that builds its state when the lifespan is entered starts each
    incarnation fresh. An exception raised inside it (by a task it started) crashes the actor,
    which its supervisor restarts; :class:`NormalExit` ends the actor as its source meant to.
    """

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Hold the source's resources while the actor runs."""
        ...


class NormalExit(Exception):
    """Raised in a source's lifespan (or a task it runs) when the source ended as it should,
    such as a server process that exited by itself with status 0.

    Its actor ends normally: only a ``permanent`` child is restarted (OTP's exit reason
    ``normal``). Any other exception is a crash.
    """


def is_source(value: object) -> TypeGuard[ToolSource]:
    """``isinstance(value, ToolSource)``, without a protocol check's cost (spawn's hot path)."""
    return (
        not isinstance(value, type)
        and hasattr(value, "name")
        and callable(getattr(value, "discover", None))
        and callable(getattr(value, "call", None))
    )


def has_lifespan(source: ToolSource) -> TypeGuard[Lifespan]:
    """``isinstance(source, Lifespan)``, without a protocol check's cost."""
    return callable(getattr(source, "lifespan", None))


def honours_cancellation(source: ToolSource) -> bool:
    """Whether a source declares ``honours_cancellation = True`` (see :class:`ToolSource`)."""
    return getattr(source, "honours_cancellation", False) is True
