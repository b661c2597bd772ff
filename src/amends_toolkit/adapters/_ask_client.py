"""Asking the client that called (issue 29, branch i29-client): until it lands, no client can
be asked, so the gateway's ``either`` asks out of band and ``caller`` asks nobody.

The integrator replaces this module with i29-client's ``at.adapters.ask_client`` and
``at.adapters.client_can_be_asked``; the names and their meaning are that branch's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from amends_toolkit._errors import ApprovalRequired

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject

__all__ = ("ask_client", "client_can_be_asked")


def client_can_be_asked() -> bool:
    """Whether the client of the current call declared elicitation: none can be asked yet."""
    return False


async def ask_client(tool: str, input: JsonObject) -> bool:
    """Ask the client of the current call.

    Raises:
        ApprovalRequired: always, until i29-client lands.
    """
    raise ApprovalRequired("the client that called cannot be asked")
