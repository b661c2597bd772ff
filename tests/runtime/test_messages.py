from __future__ import annotations

from amends_toolkit.runtime._messages import Call, Request


def test_a_call_is_made_as_every_request_is() -> None:
    # Every field a Request has, a Call has too, with the same values.
    call = Call("t", {}, 5.0)
    request = Request(5.0)
    for kind in Request.__mro__:
        for field in getattr(kind, "__slots__", ()):
            if field != "__weakref__":
                assert getattr(call, field) == getattr(request, field), field
    assert (call.tool, call.input, call.progress) == ("t", {}, None)
