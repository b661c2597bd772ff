"""The one shape of every tool source."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Protocol, TypeGuard, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Sequence
    from contextlib import AbstractAsyncContextManager

    from amends_toolkit._definitions import ToolDefinition
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = (
    "Lifespan",
    "NormalExit",
    "ToolSource",
    "call_checked",
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
    its calls end soon after they are cancelled, cleanup included (a bounded, shielded one): an
    actor then runs a call in its caller's own task when it has room (``Runtime.spawn``'s
    ``inline``), since no call of it can hold a caller past its deadline. Every built-in source
    declares it; a source without it is served by the actor's workers.

    A source that checks each input itself before sending it (that it is JSON a peer may be sent,
    nested at most so deep) may also define ``call_checked(tool, input)``: the same call, for an
    input its caller has held to that already, as a toolkit does before every call (see
    :func:`call_checked`). It skips its own walk, unless its own limit of depth is smaller than
    the toolkit's. A direct ``call`` always checks. A subclass that overrides ``call`` and not
    ``call_checked`` is called through its ``call``.
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


def call_checked(source: ToolSource, tool: str, input: JsonObject) -> Awaitable[JsonValue]:
    """``source.call(tool, input)`` for an input its caller has checked already: through the
    source's ``call_checked`` when it has one (see :class:`ToolSource`).

    Checked means what :class:`~amends_toolkit.runtime.InputValidator` holds every input to
    before its schema: :func:`amends_toolkit._json.input_refusal` at the default depth
    (:data:`amends_toolkit._json.MAX_DEPTH`) found nothing.
    """
    kind = type(source)
    pairs = _PAIRED.get(id(kind))
    if pairs is None:
        pairs = _paired(kind)
    if pairs:
        # No cast(): a Python call, and every call of a toolkit's source comes here.
        return source.call_checked(tool, input)  # type: ignore[attr-defined,no-any-return]
    return source.call(tool, input)


_PAIRED: dict[int, bool] = {}
"""Per class of source, by its id, whether :func:`call_checked` may take its ``call_checked``.
Weakly: a host may make a class per source, which must not live on for being called once; a
class's entry goes as the class goes (before its id can be another's). Not a
``WeakKeyDictionary``, whose lookup is Python code that makes a weak reference each time: every
call of a toolkit's source comes here, over an actor twice."""
_HELD: dict[int, weakref.ref[type]] = {}
"""The weak reference of each class in :data:`_PAIRED`, whose callback forgets it."""


def _paired(kind: type) -> bool:
    key = id(kind)

    def forget(_: weakref.ref[type]) -> None:
        _PAIRED.pop(key, None)
        _HELD.pop(key, None)

    _HELD[key] = weakref.ref(kind, forget)
    pairs = _PAIRED[key] = _pairs(kind)
    return pairs


def _pairs(kind: type) -> bool:
    """Whether ``kind``'s ``call_checked`` goes with the ``call`` it has: no class of its MRO
    overrides ``call`` below the one that defines ``call_checked``. A subclass that overrides
    only ``call`` (a host's, to count or log its calls) is reached through that ``call``."""
    for klass in kind.__mro__:
        if "call_checked" in vars(klass):
            # ``None`` says there is none, as ``getattr`` read it before
            return vars(klass)["call_checked"] is not None
        if "call" in vars(klass):
            return False
    return False


def has_lifespan(source: ToolSource) -> TypeGuard[Lifespan]:
    """``isinstance(source, Lifespan)``, without a protocol check's cost."""
    return callable(getattr(source, "lifespan", None))


def honours_cancellation(source: ToolSource) -> bool:
    """Whether a source declares ``honours_cancellation = True`` (see :class:`ToolSource`)."""
    return getattr(source, "honours_cancellation", False) is True
