"""Out-of-band approvals: a call that needs a person's approval waits, stored and announced,
until an approver decides it elsewhere (a web page, a terminal, ``POST /approvals/{id}``).

:class:`Approvals` is the piece a host embeds: its :meth:`~Approvals.approve` is an
:data:`~amends_toolkit.runtime.Approve` (give it to ``at.Session`` or ``at.adapters.mcp_server``);
its :meth:`~Approvals.pending` lists what waits and :meth:`~Approvals.decide` decides it, for the
host's own web UI::

    approvals = at.adapters.Approvals(store=at.adapters.SQLiteApprovalStore("approvals.db"))
    front = at.adapters.mcp_server(toolkit, name="tasks", approve=approvals.approve)
    ...
    for pending in await approvals.pending():       # in the host's approvers' page
        ...
    await approvals.decide(pending.id, approve=True, by="alice")

A pending approval keeps what an approver needs, never the input itself: the tool, its source,
the input's SHA-256 digest and the input shown safe and cut (:func:`~amends_toolkit._peer.shown`),
the caller and profile, when it was made and its deadline. Where it is kept is an
:class:`ApprovalStore`: :class:`MemoryApprovalStore` by default, :class:`SQLiteApprovalStore` to
keep pending approvals across a restart; a store that replicas share (Redis, Postgres) implements
the same Protocol, and a waiting call reads its approval again every ``poll_interval`` seconds
so that a decision another process stored reaches it.

When the call that waited is gone (its client left, or the process stopped: after a restart),
its pending approval stays listed until its deadline (an approver sees what was asked). A decision of it is kept until that deadline for the
caller's next call of the same tool with the same input (the same digest), which it decides once
(that call runs, or reads ``ApprovalDenied``, without being asked again); that same call made
before anyone decides waits on the approval of before rather than asking anew.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

import anyio
import anyio.to_thread
import attrs

from amends_toolkit._errors import ApprovalRequired, ApprovalTimedOut
from amends_toolkit._log import get_logger
from amends_toolkit._options import check_counts, check_optional_seconds, check_seconds
from amends_toolkit._peer import MAX_SHOWN, shown

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject

__all__ = (
    "APPROVAL_TIMEOUT",
    "MAX_NAME_KEPT",
    "MAX_PENDING",
    "MAX_PENDING_PER_CALLER",
    "AlreadyDecided",
    "ApprovalStore",
    "Approvals",
    "MemoryApprovalStore",
    "PendingApproval",
    "SQLiteApprovalStore",
    "UnknownApproval",
)

_log = get_logger("amends_toolkit.approvals")

APPROVAL_TIMEOUT: Final = 300.0
"""Seconds a call waits for an approver's decision (``approval_timeout``); then it fails with
``ApprovalTimedOut``."""
MAX_PENDING: Final = 1_000
"""Approvals pending at once, of every caller (``max_pending``); past it a call is not asked
(``ApprovalRequired``)."""
MAX_PENDING_PER_CALLER: Final = 10
"""Approvals pending at once of one caller (``max_pending_per_caller``); past it that caller's
call is not asked (``ApprovalRequired``), and the other callers' still are."""
MAX_NAME_KEPT: Final = 200
"""The most characters kept of a pending approval's tool, source, caller, profile and of who
decided it."""
POLL_INTERVAL: Final = 2.0
"""Seconds between a waiting call's readings of a store that is not this process's memory."""
STORE_TIMEOUT: Final = 5.0
"""Seconds the store may take to forget an approval once its call is done with it."""
_ID_BYTES: Final = 18
"""Random bytes of an approval's id (24 characters): an id cannot be guessed."""


class UnknownApproval(LookupError):
    """No approval of that id is pending: it never was, it was decided and its call ran, or it
    passed its deadline."""


class AlreadyDecided(ValueError):
    """The approval was decided already: a decision is made once."""


@attrs.frozen(kw_only=True)
class PendingApproval:
    """One call waiting for a person's decision, as an approver is shown it.

    Attributes:
        id: The approval's id: random, unguessable (what ``decide`` takes).
        tool: The tool's model-facing name. This and every name below are kept shown safe
            and cut to :data:`MAX_NAME_KEPT` characters (:func:`~amends_toolkit._peer.shown`).
        source: The source the tool is of, when known.
        input_digest: The SHA-256 of the input's JSON (keys sorted, no spaces), in hex: what
            binds a decision to this input without keeping it.
        input_shown: The input's JSON as a person may read it: control and format characters
            written as escapes, cut to :data:`~amends_toolkit._peer.MAX_SHOWN` characters.
        caller: Who made the call (a ``Caller.id``), when known.
        profile: The gateway's profile that served the caller, when known.
        created: When the call asked, in seconds since the epoch.
        deadline: When it stops waiting, in seconds since the epoch.
        approved: ``None`` while pending; then what was decided.
        decided_by: Who decided it (as the host said in ``decide``).
    """

    id: str
    tool: str
    source: str | None
    input_digest: str
    input_shown: str
    caller: str | None
    profile: str | None
    created: float
    deadline: float
    approved: bool | None = None
    decided_by: str | None = None

    def to_json(self) -> JsonObject:
        """The approval as JSON (what ``GET /approvals`` lists)."""
        return {
            "id": self.id,
            "tool": self.tool,
            "source": self.source,
            "input_digest": self.input_digest,
            "input": self.input_shown,
            "caller": self.caller,
            "profile": self.profile,
            "created": self.created,
            "deadline": self.deadline,
        }


class ApprovalStore(Protocol):
    """Where pending approvals are kept. Each method is one atomic step, so that processes
    sharing a store (replicas) never decide one approval twice nor pass the bounds."""

    async def add(
        self, approval: PendingApproval, *, max_pending: int, max_per_caller: int
    ) -> bool:
        """Keep ``approval``, unless ``max_pending`` approvals are pending already, or
        ``max_per_caller`` of its caller: then ``False``, and nothing is kept."""
        ...

    async def get(self, id: str) -> PendingApproval | None:
        """The approval of ``id`` (pending or decided), if it is kept."""
        ...

    async def matching(self, caller: str | None, tool: str, digest: str) -> list[PendingApproval]:
        """The approvals kept of this caller, tool and input digest, oldest first."""
        ...

    async def undecided(self, now: float) -> list[PendingApproval]:
        """Every approval still pending, oldest first; those past their deadline at ``now``
        (pending or decided) are forgotten first."""
        ...

    async def decide(self, id: str, *, approved: bool, by: str) -> PendingApproval:
        """Decide the approval of ``id``, once; returns it decided.

        Raises:
            UnknownApproval: none of that id is kept.
            AlreadyDecided: it was decided already.
        """
        ...

    async def remove(self, id: str) -> bool:
        """Forget the approval of ``id``; whether it was kept (``False``: another took it)."""
        ...


def _counts(approvals: Sequence[PendingApproval], caller: str | None) -> tuple[int, int]:
    pending = [a for a in approvals if a.approved is None]
    return len(pending), sum(1 for a in pending if a.caller == caller)


class MemoryApprovalStore:
    """Pending approvals in this process's memory: lost when it stops."""

    def __init__(self) -> None:
        self._kept: dict[str, PendingApproval] = {}

    async def add(
        self, approval: PendingApproval, *, max_pending: int, max_per_caller: int
    ) -> bool:
        """See :meth:`ApprovalStore.add`."""
        in_all, of_caller = _counts(list(self._kept.values()), approval.caller)
        if in_all >= max_pending or of_caller >= max_per_caller:
            return False
        self._kept[approval.id] = approval
        return True

    async def get(self, id: str) -> PendingApproval | None:
        """See :meth:`ApprovalStore.get`."""
        return self._kept.get(id)

    async def matching(self, caller: str | None, tool: str, digest: str) -> list[PendingApproval]:
        """See :meth:`ApprovalStore.matching`."""
        return [
            a
            for a in self._kept.values()
            if a.caller == caller and a.tool == tool and a.input_digest == digest
        ]

    async def undecided(self, now: float) -> list[PendingApproval]:
        """See :meth:`ApprovalStore.undecided`."""
        for id in [id for id, a in self._kept.items() if a.deadline <= now]:
            del self._kept[id]
        return [a for a in self._kept.values() if a.approved is None]

    async def decide(self, id: str, *, approved: bool, by: str) -> PendingApproval:
        """See :meth:`ApprovalStore.decide`."""
        kept = self._kept.get(id)
        if kept is None:
            raise UnknownApproval(id)
        if kept.approved is not None:
            raise AlreadyDecided(id)
        decided = attrs.evolve(kept, approved=approved, decided_by=by)
        self._kept[id] = decided
        return decided

    async def remove(self, id: str) -> bool:
        """See :meth:`ApprovalStore.remove`."""
        return self._kept.pop(id, None) is not None


_COLUMNS: Final = (
    "id, tool, source, input_digest, input_shown, caller, profile, created, deadline, approved,"
    " decided_by"
)
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, source TEXT, input_digest TEXT NOT NULL,
    input_shown TEXT NOT NULL, caller TEXT, profile TEXT, created REAL NOT NULL,
    deadline REAL NOT NULL, approved INTEGER, decided_by TEXT
);
CREATE INDEX IF NOT EXISTS approvals_caller ON approvals (caller, tool, input_digest);
CREATE INDEX IF NOT EXISTS approvals_deadline ON approvals (deadline);
"""


def _row(row: tuple[object, ...]) -> PendingApproval:
    (id, tool, source, digest, shown_, caller, profile, created, deadline, approved, by) = row
    return PendingApproval(
        id=str(id),
        tool=str(tool),
        source=None if source is None else str(source),
        input_digest=str(digest),
        input_shown=str(shown_),
        caller=None if caller is None else str(caller),
        profile=None if profile is None else str(profile),
        created=float(created),  # type: ignore[arg-type]
        deadline=float(deadline),  # type: ignore[arg-type]
        approved=None if approved is None else bool(approved),
        decided_by=None if by is None else str(by),
    )


class SQLiteApprovalStore:
    """Pending approvals in a SQLite file, so that a restart keeps them (one machine; its
    processes may share the file). Each step runs in a worker thread, never on the event loop,
    one at a time.

    Args:
        path: The database file; made, with its table, when missing.

    Raises:
        sqlite3.Error: the file cannot be opened or is no database of approvals.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        # isolation_level=None: every step says its own transaction (BEGIN IMMEDIATE), so a
        # count and the insert it allows are one, even across processes.
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=5.0
        )
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()

    async def _run(self, step: Callable[[sqlite3.Connection], object]) -> object:
        def locked() -> object:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    done = step(self._db)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                return done

        return await anyio.to_thread.run_sync(locked)

    async def add(
        self, approval: PendingApproval, *, max_pending: int, max_per_caller: int
    ) -> bool:
        """See :meth:`ApprovalStore.add`."""

        def step(db: sqlite3.Connection) -> bool:
            ((in_all,),) = db.execute("SELECT count(*) FROM approvals WHERE approved IS NULL")
            ((of_caller,),) = db.execute(
                "SELECT count(*) FROM approvals WHERE approved IS NULL AND caller IS ?",
                (approval.caller,),
            )
            if in_all >= max_pending or of_caller >= max_per_caller:
                return False
            db.execute(
                f"INSERT INTO approvals ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                attrs.astuple(approval),
            )
            return True

        return bool(await self._run(step))

    async def get(self, id: str) -> PendingApproval | None:
        """See :meth:`ApprovalStore.get`."""

        def step(db: sqlite3.Connection) -> PendingApproval | None:
            row = db.execute(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (id,)).fetchone()
            return None if row is None else _row(row)

        found = await self._run(step)
        assert found is None or isinstance(found, PendingApproval)
        return found

    async def matching(self, caller: str | None, tool: str, digest: str) -> list[PendingApproval]:
        """See :meth:`ApprovalStore.matching`."""

        def step(db: sqlite3.Connection) -> list[PendingApproval]:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM approvals WHERE caller IS ? AND tool = ? "
                "AND input_digest = ? ORDER BY created",
                (caller, tool, digest),
            )
            return [_row(row) for row in rows]

        return await self._listed(step)

    async def undecided(self, now: float) -> list[PendingApproval]:
        """See :meth:`ApprovalStore.undecided`."""

        def step(db: sqlite3.Connection) -> list[PendingApproval]:
            db.execute("DELETE FROM approvals WHERE deadline <= ?", (now,))
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM approvals WHERE approved IS NULL ORDER BY created"
            )
            return [_row(row) for row in rows]

        return await self._listed(step)

    async def _listed(
        self, step: Callable[[sqlite3.Connection], list[PendingApproval]]
    ) -> list[PendingApproval]:
        listed = await self._run(step)
        assert isinstance(listed, list)
        return listed

    async def decide(self, id: str, *, approved: bool, by: str) -> PendingApproval:
        """See :meth:`ApprovalStore.decide`."""

        def step(db: sqlite3.Connection) -> PendingApproval:
            row = db.execute(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (id,)).fetchone()
            if row is None:
                raise UnknownApproval(id)
            kept = _row(row)
            if kept.approved is not None:
                raise AlreadyDecided(id)
            db.execute(
                "UPDATE approvals SET approved = ?, decided_by = ? WHERE id = ?",
                (int(approved), by, id),
            )
            return attrs.evolve(kept, approved=approved, decided_by=by)

        decided = await self._run(step)
        assert isinstance(decided, PendingApproval)
        return decided

    async def remove(self, id: str) -> bool:
        """See :meth:`ApprovalStore.remove`."""
        removed = await self._run(
            lambda db: db.execute("DELETE FROM approvals WHERE id = ?", (id,)).rowcount
        )
        return bool(removed)


Announce = Callable[[PendingApproval], Awaitable[None]]
"""Told of each new pending approval (a webhook, a chat message, a terminal's question); runs
beside the waiting call and is cancelled once the approval is decided or times out."""


class Approvals:
    """Out-of-band approvals: an :data:`~amends_toolkit.runtime.Approve` that stores each call
    needing approval as a :class:`PendingApproval`, announces it, and waits for a decision.

    Args:
        store: Where pending approvals are kept (default: a :class:`MemoryApprovalStore`).
        approval_timeout: Seconds a call waits for a decision (:data:`APPROVAL_TIMEOUT`).
        announce: Told of each new pending approval (see :data:`Announce`); its failure is
            logged (``approval.announce_failed``) and the call waits on.
        max_pending: Approvals pending at once, in all (:data:`MAX_PENDING`).
        max_pending_per_caller: Approvals pending at once of one caller
            (:data:`MAX_PENDING_PER_CALLER`).
        poll_interval: Seconds between a waiting call's readings of its approval in the store,
            for a decision another process stored (default :data:`POLL_INTERVAL`, and none for
            the memory store, which no other process reaches).
        clock: Seconds since the epoch, for ``created`` and ``deadline``.

    Raises:
        ValueError: a timeout or bound is not a positive number.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore | None = None,
        approval_timeout: float = APPROVAL_TIMEOUT,
        announce: Announce | None = None,
        max_pending: int = MAX_PENDING,
        max_pending_per_caller: int = MAX_PENDING_PER_CALLER,
        poll_interval: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        check_seconds(approval_timeout=approval_timeout)
        check_optional_seconds(poll_interval=poll_interval)
        check_counts(max_pending=max_pending, max_pending_per_caller=max_pending_per_caller)
        self.store: ApprovalStore = MemoryApprovalStore() if store is None else store
        self.approval_timeout = approval_timeout
        self._announce = announce
        self._max_pending = max_pending
        self._max_per_caller = max_pending_per_caller
        if poll_interval is None and not isinstance(self.store, MemoryApprovalStore):
            poll_interval = POLL_INTERVAL
        self._poll = poll_interval
        self._clock = clock
        # The approvals a call of this process waits on, each with the event its decision sets.
        self._waiting: dict[str, anyio.Event] = {}

    async def approve(self, tool: str, input: JsonObject) -> bool:
        """An :data:`~amends_toolkit.runtime.Approve`: :meth:`request` without a caller,
        profile or source; ``True`` when an approver approved the call.

        Raises:
            ApprovalRequired: too many approvals are pending.
            ApprovalTimedOut: nobody decided within ``approval_timeout``.
        """
        return (await self.request(tool, input)).approved is True

    async def request(
        self,
        tool: str,
        input: JsonObject,
        *,
        caller: str | None = None,
        profile: str | None = None,
        source: str | None = None,
        deadline: float | None = None,
    ) -> PendingApproval:
        """Store a pending approval of this call, announce it, and wait until it is decided.

        Args:
            tool: The tool's model-facing name.
            input: The call's input (kept only as its digest and cut for display).
            caller: Who calls (a ``Caller.id``), for the approver and the per-caller bound.
            profile: The profile that serves the caller, for the approver.
            source: The tool's source, for the approver.
            deadline: When to stop waiting, in seconds since the epoch (default:
                ``approval_timeout`` from now).

        Returns:
            The approval as decided: ``approved`` and ``decided_by``.

        Raises:
            ApprovalRequired: ``max_pending`` approvals are pending, or
                ``max_pending_per_caller`` of this caller: nobody is asked.
            ApprovalTimedOut: nobody decided by the deadline (the approval is forgotten).

        Cancelled (the call ended: its client left, the process stops), the approval is kept
        until its deadline, and decides the caller's next same call (see the module).
        """
        text = json.dumps(input, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        caller = _kept(caller)
        tool = shown(tool, limit=MAX_NAME_KEPT)
        approval = await self._standing(caller, tool, digest)
        if approval is not None and approval.approved is not None:
            return approval
        if approval is None:
            now = self._clock()
            approval = PendingApproval(
                id=secrets.token_urlsafe(_ID_BYTES),
                tool=tool,
                source=_kept(source),
                input_digest=digest,
                input_shown=shown(json.dumps(input, ensure_ascii=False), limit=MAX_SHOWN),
                caller=caller,
                profile=_kept(profile),
                created=now,
                deadline=now + self.approval_timeout if deadline is None else deadline,
            )
            # Pending ones past their deadline are forgotten first: they count no more.
            await self.store.undecided(now)
            if not await self.store.add(
                approval, max_pending=self._max_pending, max_per_caller=self._max_per_caller
            ):
                _log.warning("approval.refused_full", tool=tool, profile=profile)
                raise ApprovalRequired(
                    "too many approvals are pending (max_pending, max_pending_per_caller)"
                )
            _log.info(
                "approval.pending",
                id=approval.id,
                tool=tool,
                source=approval.source,
                profile=approval.profile,
            )
        return await self._wait(approval)

    async def _standing(self, caller: str | None, tool: str, digest: str) -> PendingApproval | None:
        """An approval of this call that no call of this process waits on (its call was gone
        in a restart): decided, it decides this call once (and is forgotten); pending, this
        call waits on it."""
        now = self._clock()
        for kept in await self.store.matching(caller, tool, digest):
            if kept.id in self._waiting or kept.deadline <= now:
                continue
            if kept.approved is None:
                return kept
            if await self.store.remove(kept.id):
                _log.info("approval.standing", id=kept.id, approved=kept.approved)
                return kept
        return None

    async def _wait(self, approval: PendingApproval) -> PendingApproval:
        """Wait for ``approval``'s decision until its deadline; then it is forgotten (used, or
        timed out). Cancelled (the call ended), it is kept until its deadline: see the module."""
        remaining = max(0.0, approval.deadline - self._clock())
        decided = anyio.Event()
        self._waiting[approval.id] = decided
        kept: PendingApproval | None = None
        try:
            with anyio.move_on_after(remaining):
                async with anyio.create_task_group() as tasks:
                    if self._announce is not None:
                        tasks.start_soon(self._announced, approval)
                    while kept is None or kept.approved is None:
                        with anyio.move_on_after(
                            float("inf") if self._poll is None else self._poll
                        ):
                            await decided.wait()
                        kept = await self.store.get(approval.id)
                        if kept is None:
                            break  # forgotten by another process (past its deadline there)
                    tasks.cancel_scope.cancel()
        finally:
            del self._waiting[approval.id]
        with anyio.move_on_after(STORE_TIMEOUT, shield=True):
            await self.store.remove(approval.id)
        if kept is None or kept.approved is None:
            _log.info("approval.timed_out", id=approval.id, tool=approval.tool)
            raise ApprovalTimedOut(f"nobody decided approval {approval.id} by its deadline")
        _log.info("approval.decided", id=kept.id, approved=kept.approved, by=kept.decided_by)
        return kept

    async def _announced(self, approval: PendingApproval) -> None:
        try:
            await self._announce(approval)  # type: ignore[misc]
        except Exception as error:  # noqa: BLE001 - the operator reads it in the log
            _log.warning("approval.announce_failed", id=approval.id, error=type(error).__name__)

    async def pending(self) -> list[PendingApproval]:
        """Every approval pending, oldest first (those past their deadline are forgotten)."""
        return await self.store.undecided(self._clock())

    async def get(self, id: str) -> PendingApproval | None:
        """The pending approval of ``id``; ``None`` when none is pending of it."""
        kept = await self.store.get(id)
        if kept is None or kept.approved is not None or kept.deadline <= self._clock():
            return None
        return kept

    async def decide(self, id: str, *, approve: bool, by: str) -> PendingApproval:
        """Decide a pending approval, once: its call runs (``approve=True``) or reads
        ``ApprovalDenied``.

        Args:
            id: The approval's id.
            approve: What the person decided.
            by: Who decided (for the audit line: ``"approver key:alice"``, ``"terminal"``).

        Raises:
            UnknownApproval: no approval of that id is pending (never was, or past its deadline).
            AlreadyDecided: it was decided already.
        """
        kept = await self.store.get(id)
        if kept is None or kept.deadline <= self._clock():
            raise UnknownApproval(id)
        decided = await self.store.decide(id, approved=approve, by=shown(by, limit=MAX_NAME_KEPT))
        event = self._waiting.get(id)
        if event is not None:
            event.set()
        return decided


def _kept(name: str | None) -> str | None:
    """A name as a pending approval keeps it: shown safe, cut to :data:`MAX_NAME_KEPT`."""
    return None if name is None else shown(name, limit=MAX_NAME_KEPT)
