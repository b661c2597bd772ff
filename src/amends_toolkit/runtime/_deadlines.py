"""A call's deadlines: which one ends a call, and what the host and the model read of it.

One call can meet three deadlines, each set by a constructor argument:

========================  ==================================  ======================================
deadline                  set by                              what it bounds
========================  ==================================  ======================================
the session's timeout     ``at.Session(timeout=)``,           the call as the model made it (the
                          ``mcp_server(timeout=)``            time a person takes to approve it not
                                                              counted)
``call_timeout``          ``runtime.spawn(call_timeout=)``    the call in its actor: waiting in the
                                                              mailbox or its caller's share, then
                                                              running (a source that ignores
                                                              cancellation is given ``grace``)
the source's timeout      ``at.http.make(timeout=)``,         one request to the system (the MCP
                          ``at.mcp.http(timeout=)``...        sources' through their client)
========================  ==================================  ======================================

Each is a cancel scope, so the earliest ends the call, whichever it is. Code mode's ``timeout``
bounds a run of code, not a call, and is its own failure (``Timeout``).

Whichever deadline ends a call, :func:`timed_out` makes what follows: one ``call.timed_out`` log
event (source, tool, which deadline, its seconds when known) and an ``UnavailableError`` whose
message tells the host which deadline it was (``"tasks__list: no answer within the call_timeout
of 10 seconds"``). The model reads the reason's default message: unavailable, retryable.
"""

from __future__ import annotations

from amends_toolkit._errors import UnavailableError
from amends_toolkit._log import get_logger

__all__ = ("timed_out",)

_log = get_logger("amends_toolkit.calls")


def timed_out(
    source: str, tool: str, deadline: str, seconds: float | None = None
) -> UnavailableError:
    """The failure of a call that ``deadline`` ended (logged here, the one place it is).

    Args:
        source: The source's name.
        tool: The tool's name, as the source knows it or as the model does (or the protocol
            method, such as ``initialize``, for a source's own request).
        deadline: Which deadline: ``"call_timeout"``, ``"Session timeout"``, ``"source's
            timeout"``.
        seconds: Its length, when the place that met it knows it.
    """
    _log.warning("call.timed_out", source=source, tool=tool, deadline=deadline, timeout=seconds)
    length = "" if seconds is None else f" of {seconds:g} seconds"
    return UnavailableError(
        source=source, message=f"{tool}: no answer within the {deadline}{length}"
    )
