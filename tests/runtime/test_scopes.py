"""``scopes()``: the backend's own cancel scope class, a conscious departure from making each
scope with ``anyio.CancelScope()`` (which asks sniffio for the backend every time)."""

from __future__ import annotations

import anyio
import pytest

from amends_toolkit.runtime._scopes import scopes

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


async def test_the_class_is_the_one_anyio_makes_on_this_backend(anyio_backend: str) -> None:
    assert scopes() is type(anyio.CancelScope())
    assert issubclass(scopes(), anyio.CancelScope)


async def test_a_scope_it_makes_cancels_and_takes_a_deadline_as_anyio_s_does(
    anyio_backend: str,
) -> None:
    make = scopes()
    with make() as scope:
        scope.cancel()
        await anyio.lowlevel.checkpoint()
    assert scope.cancelled_caught
    with make(deadline=anyio.current_time()) as due:
        await anyio.sleep_forever()
    assert due.cancelled_caught
    with make(shield=True) as shielded:
        assert shielded.shield
