"""The runtime: a supervisor over a task group, hosting one actor per spawned source."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from amends_toolkit.runtime._actor import ActorRef, Restart

if TYPE_CHECKING:
    from types import TracebackType

    from anyio.abc import TaskGroup

    from amends_toolkit.runtime._source import ToolSource

__all__ = ("Runtime",)

_RESTART = Restart()


class Runtime:
    """Hosts tool sources as supervised actors.

    ``async with at.Runtime() as runtime:``; leaving the block stops every actor, which answers
    every waiting caller (``UnavailableError``) and leaves its source's lifespan; no task is left
    behind.
    """

    def __init__(self) -> None:
        self._tasks: TaskGroup | None = None
        self._actors: list[ActorRef] = []

    async def __aenter__(self) -> Runtime:
        if self._tasks is not None:
            raise RuntimeError("a Runtime is entered once")
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        assert self._tasks is not None
        # Stopping is cleanup: it runs whatever ended the block, bounded by each source's own
        # shielded, bounded lifespan exit.
        with anyio.CancelScope(shield=True):
            for actor in self._actors:
                await actor.stop()
        return await self._tasks.__aexit__(kind, error, traceback)

    async def spawn(
        self,
        source: ToolSource,
        *,
        max_concurrency: int = 64,
        mailbox_size: int = 256,
        call_timeout: float | None = None,
        restart: Restart = _RESTART,
    ) -> ActorRef:
        """Start an actor for ``source`` and return its ref, itself a ToolSource.

        Args:
            source: any object with ``name``, ``discover`` and ``call``; one with ``lifespan()``
                holds it while the actor runs.
            max_concurrency: calls that run at once inside the actor; more wait in the mailbox.
            mailbox_size: requests that wait; beyond it a caller waits to send (backpressure).
            call_timeout: seconds a request may take before it ends as ``UnavailableError``.
            restart: how a crashed actor is restarted.

        Raises:
            ValueError: a bad option (a programmer's mistake, raised at once).
            RuntimeError: the runtime is not entered.
        """
        if self._tasks is None:
            raise RuntimeError("spawn needs an entered Runtime: async with at.Runtime() as rt")
        actor = ActorRef(
            source,
            max_concurrency=max_concurrency,
            mailbox_size=mailbox_size,
            call_timeout=call_timeout,
            restart=restart,
        )
        self._actors.append(actor)
        await self._tasks.start(actor.supervise)
        return actor
