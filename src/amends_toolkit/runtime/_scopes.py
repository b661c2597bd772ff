"""Cancel scopes made where every call makes one."""

from __future__ import annotations

import anyio

__all__ = ("scopes",)


def scopes() -> type[anyio.CancelScope]:
    """What makes cancel scopes of the running event loop's backend, with the arguments of
    ``anyio.CancelScope`` (call it inside the loop).

    ``anyio.CancelScope()`` asks which backend runs on each call (through sniffio, more than
    half of what making a scope costs); the backend's own class, the type of one scope made
    here, makes the next ones directly. A Session and an actor's inline calls make one a call.
    """
    return type(anyio.CancelScope())
