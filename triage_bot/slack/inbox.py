"""The durable inbox: every Slack request that carries work is written down before its ack.

Slack never redelivers an event it got a 200 for, so work that lives only in memory after the ack
dies with the process (`kill -9`, an OOM kill, a node lost). Here the request's body goes into
`slack_inbox` first, keyed by what makes it unique (the event id, or the trigger id of a
command, shortcut, click or view); the ack follows, and the work claims the row, runs, and marks
it done. A row nobody finished is picked up and done once:

- by this replica after a restart (rows it accepted before it started),
- by any replica once a claimed row's lease has run out, or a row has waited unclaimed too long
  (its acceptor died before it started, or its queue was full).

Claims are conditional updates, so two replicas never run one row. Once-only comes for free: a
Slack retry, a replayed request or a second replica finds the key taken and does nothing.

While the database is away (or hangs: its write has a deadline) the row goes to a local SQLite
inbox next to the spool instead, which is checked first: once-only still holds on this replica,
and its rows are swept like the others. A replayed job runs with `REPLAY` set, so a reply that a
crashed run had already posted is found by its key in Slack and not posted again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from triage_bot.redaction import redact_value
from triage_bot.slack.outbox import utcnow

log = logging.getLogger(__name__)

inbox_metadata = MetaData()
inbox_table = Table(
    "slack_inbox",
    inbox_metadata,
    Column("key", String(255), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("body", JSON, nullable=False),
    Column("state", String(16), nullable=False),  # pending | running | done
    Column("accepted_by", String(128), nullable=False),
    Column("owner", String(128)),
    Column("lease_until", DateTime(timezone=True)),
    Column("attempts", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False, index=True),
    Column("done_at", DateTime(timezone=True)),
)

REPLAY: ContextVar[bool] = ContextVar("triage_inbox_replay", default=False)
DONE_KEPT = timedelta(days=1)  # done rows answer "seen before" for Slack retries and replays


@dataclass(frozen=True)
class Orphan:
    key: str
    kind: str
    body: dict[str, Any]
    local: bool


class Inbox:
    """The shared inbox on the history's database, with a local one for when it is away."""

    def __init__(
        self,
        shared: Engine | None,
        local: Engine,
        *,
        replica: str,
        lease: timedelta = timedelta(seconds=120),
        pending_grace: timedelta = timedelta(seconds=30),
        write_deadline_s: float = 1.5,
        down_for: timedelta = timedelta(seconds=10),
        clock: Callable[[], datetime] = utcnow,
    ):
        self.shared, self.local = shared, local
        self.replica = replica
        self.lease, self.pending_grace = lease, pending_grace
        self.write_deadline_s = write_deadline_s
        self.down_for = down_for
        self.clock = clock
        self.started_at = clock()
        self._down_until: datetime | None = None
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(2, thread_name_prefix="inbox-db")
        inbox_metadata.create_all(local, checkfirst=True)
        # the local inbox holds rows only while the shared database is (or was) away, or when there
        # is none: until it holds one, no request looks there (three queries a request saved)
        with local.connect() as conn:
            self._local_used = (
                shared is None or conn.execute(select(inbox_table.c.key).limit(1)).first() is not None
            )

    # -- the shared database, with a deadline ------------------------------------------------

    def _shared_ok(self) -> bool:
        with self._lock:
            return self.shared is not None and (self._down_until is None or self.clock() >= self._down_until)

    def _on_shared(self, work: Callable[[Engine], Any]) -> Any:
        """Run `work` on the shared database within the deadline; raise when it fails or hangs
        (then skip it for a while: a hung server must not cost every request its deadline)."""
        assert self.shared is not None
        future = self._writer.submit(work, self.shared)
        try:
            return future.result(timeout=self.write_deadline_s)
        except Exception as exc:
            with self._lock:
                self._down_until = self.clock() + self.down_for
            reason = "no answer in time" if isinstance(exc, FutureTimeout) else type(exc).__name__
            log.warning(
                "inbox: the shared database failed (%s); using the local inbox for %s s",
                reason,
                int(self.down_for.total_seconds()),
            )
            raise

    # -- accept, claim, done -----------------------------------------------------------------

    def accept(self, key: str, kind: str, body: dict[str, Any]) -> bool:
        """Write the request down (before its ack); False when its key was seen before."""
        row = {
            "key": key[:255],
            "kind": kind,
            "body": redact_value(body),
            "state": "pending",
            "accepted_by": self.replica,
            "attempts": 0,
            "created_at": self.clock(),
        }
        if self._in_local(key):
            return False  # taken here while the shared database was away
        if self._shared_ok():
            with contextlib.suppress(Exception):
                return bool(self._on_shared(partial(_insert, row=row)))
        try:
            self._local_used = True  # before the row is there, so that no step misses it
            return _insert(self.local, row)
        except Exception:
            log.exception("inbox: cannot write request %s anywhere; handling it without a record", key)
            return True

    def claim(self, key: str) -> bool | None:
        """Take a pending row to run it now: True (it is ours), False (already taken or done), None
        (no inbox holds it: run it anyway)."""
        now = self.clock()
        values = {"state": "running", "owner": self.replica, "lease_until": now + self.lease}
        pending = inbox_table.c.state == "pending"
        if self._in_local(key):
            return _claim(self.local, key=key, values=values, condition=pending)
        if self._shared_ok():
            with contextlib.suppress(Exception):
                return bool(self._on_shared(partial(_claim, key=key, values=values, condition=pending)))
        # the shared row cannot be claimed now: run it under a local claim (its shared row, if it
        # exists, is found done by key when a replay looks for the reply in Slack)
        try:
            self._local_used = True
            _insert(
                self.local,
                {
                    "key": key[:255],
                    "kind": "unknown",
                    "body": {},
                    "state": "running",
                    "accepted_by": self.replica,
                    "owner": self.replica,
                    "attempts": 1,
                    "lease_until": now + self.lease,
                    "created_at": now,
                },
            )
            return True
        except Exception:
            return None

    def done(self, key: str) -> None:
        values = {"state": "done", "done_at": self.clock(), "lease_until": None}
        if self._in_local(key):
            with self.local.begin() as conn:
                conn.execute(update(inbox_table).where(inbox_table.c.key == key).values(**values))
            return
        if self._shared_ok():
            try:
                self._on_shared(partial(_set, key=key, values=values))
            except Exception:
                log.warning(
                    "inbox: %s ran, but its row could not be marked done (the shared database is away)", key
                )

    # -- what nobody finished ----------------------------------------------------------------

    def orphans(self, limit: int = 20) -> list[Orphan]:
        """Rows to run again, each claimed for this replica: its own from before a restart, any
        whose lease ran out, any left pending too long."""
        now = self.clock()
        values = {"state": "running", "owner": self.replica, "lease_until": now + self.lease}
        stale = _stale(now, self)
        found: list[Orphan] = []
        for local in (True, False):
            if (local and not self._local_used) or (not local and not self._shared_ok()):
                continue
            try:
                rows = self._on(local, lambda engine: _due(engine, stale, limit))
                for row in rows:
                    if self._on(local, partial(_claim, key=row.key, values=values, condition=stale)):
                        found.append(Orphan(row.key, row.kind, dict(row.body or {}), local))
            except Exception:
                continue  # the shared database is away: its orphans wait for the next sweep
        return found

    def prune(self) -> None:
        """Forget done rows after a day (they answer "seen before" until then)."""
        before = self.clock() - DONE_KEPT
        condition = (inbox_table.c.state == "done") & (inbox_table.c.done_at < before)
        for local in (True, False):
            if local or self._shared_ok():
                with contextlib.suppress(Exception):
                    self._on(local, partial(_delete, condition=condition))

    def _on(self, local: bool, work: Callable[[Engine], Any]) -> Any:
        return work(self.local) if local else self._on_shared(work)

    def rows(self) -> list[dict[str, Any]]:
        """Every row, local ones marked (for tests and `/readyz`)."""
        out = []
        for engine, local in ((self.local, True), (self.shared, False)):
            if engine is None:
                continue
            with engine.connect() as conn:
                out += [{**dict(r._mapping), "local": local} for r in conn.execute(select(inbox_table))]
        return out

    def close(self) -> None:
        self._writer.shutdown(wait=False, cancel_futures=True)

    def _in_local(self, key: str) -> bool:
        """Does the local inbox hold `key`? Asked only once it has held a row."""
        if not self._local_used:
            return False
        with self.local.connect() as conn:
            return conn.execute(select(inbox_table.c.key).where(inbox_table.c.key == key)).first() is not None


def _insert(engine: Engine, row: dict[str, Any]) -> bool:
    try:
        with engine.begin() as conn:
            conn.execute(insert(inbox_table).values(**row))
        return True
    except IntegrityError:
        return False


def _claim(engine: Engine, *, key: str, values: dict[str, Any], condition: Any) -> bool:
    with engine.begin() as conn:
        result = conn.execute(
            update(inbox_table)
            .where(inbox_table.c.key == key, condition)
            .values(**values, attempts=inbox_table.c.attempts + 1)
        )
        return bool(result.rowcount)


def _set(engine: Engine, *, key: str, values: dict[str, Any]) -> None:
    with engine.begin() as conn:
        conn.execute(update(inbox_table).where(inbox_table.c.key == key).values(**values))


def _delete(engine: Engine, *, condition: Any) -> None:
    with engine.begin() as conn:
        conn.execute(delete(inbox_table).where(condition))


def _stale(now: datetime, inbox: Inbox) -> Any:
    """A row this replica may take over now."""
    return or_(
        (inbox_table.c.state == "pending") & (inbox_table.c.created_at < now - inbox.pending_grace),
        (inbox_table.c.state == "pending")
        & (inbox_table.c.accepted_by == inbox.replica)
        & (inbox_table.c.created_at < inbox.started_at),
        (inbox_table.c.state == "running") & (inbox_table.c.lease_until < now),
        (inbox_table.c.state == "running")
        & (inbox_table.c.owner == inbox.replica)
        & (inbox_table.c.lease_until < inbox.started_at + inbox.lease),  # ours, from before a restart
    )


def _due(engine: Engine, stale: Any, limit: int) -> list[Any]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                select(inbox_table.c.key, inbox_table.c.kind, inbox_table.c.body)
                .where(stale)
                .order_by(inbox_table.c.created_at)
                .limit(limit)
            )
        )


def local_engine(path: Path) -> Engine:
    """The local inbox: a SQLite file (0600, WAL) beside the spool."""
    from triage_bot.history.db import make_engine

    path.parent.mkdir(parents=True, exist_ok=True)
    return make_engine(f"sqlite:///{path}")
