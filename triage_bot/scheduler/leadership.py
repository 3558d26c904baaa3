"""Which replica runs the jobs, and that each run happens once: the leader lock and the (job, slot) claim.

On PostgreSQL the leader holds `pg_try_advisory_lock` on a connection of its own, opened with
psycopg directly and never part of SQLAlchemy's pool (a pooled connection moves or is recycled and
the lock silently goes with it); before every run it pings that connection. On SQLite an exclusive
flock on a file next to the database stands in for the lock. A claim row per (job, slot) turns a
second run of the same slot into a no-op, on the leader that took over too.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Column, DateTime, MetaData, String, Table, func

from triage_bot import metrics
from triage_bot.private_files import PRIVATE, append_private
from triage_bot.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)

CLAIMS_TABLE = "triage_scheduler_runs"

# The claim table as Alembic sees it (migration 0003). The PostgreSQL coordinator also creates it
# if missing, so a scheduler in a schema of its own (tests) works without migrations.
claims_metadata = MetaData()
claims_table = Table(
    CLAIMS_TABLE,
    claims_metadata,
    Column("job", String(64), primary_key=True),
    Column("slot", DateTime(timezone=True), primary_key=True),
    Column("runner", String(128), nullable=False),
    Column("claimed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)


class Coordinator(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def is_leader(self, verify: bool = True) -> bool: ...
    def claim(self, job: str, slot: datetime) -> bool: ...
    def on_leadership(self, callback: Callable[[], None]) -> None: ...


class _LeaderLoop:
    """A daemon thread that tries to become (or stay) leader every `poll_s` seconds."""

    def __init__(self, poll_s: float):
        self.poll_s = poll_s
        self._leader = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.RLock()
        self._standby_until = 0.0  # a standby that failed to reach the database waits this long

    def on_leadership(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def start(self) -> None:
        self._stop.clear()
        metrics.watch(metrics.SCHEDULER_LEADER, lambda: self._leader)  # no lock: one bool, read at scrape
        self._tick()
        self._thread = threading.Thread(target=self._loop, name="scheduler-leader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            self._leader = False
            self._release()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            self._tick()

    def _tick(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            if self._leader:
                if not self._alive():
                    log.warning("scheduler: lost the leader lock; standing by")
                    self._leader = False
                    self._release()
                return
            if time.monotonic() < self._standby_until:
                return
            try:
                acquired = self._acquire()
            except Exception as exc:
                log.warning("scheduler: cannot try the leader lock: %s", exc)
                self._release()
                # the database is away: when it is back, give a leader that ran on degraded the
                # first chance to take its lock back (one leader through the outage and after)
                self._standby_until = time.monotonic() + max(2.0, 5 * self.poll_s)
                return
            if not acquired:
                return
            self._leader = True
            log.info("scheduler: this replica is now the leader")
        for callback in self._callbacks:
            try:
                callback()
            except Exception:
                log.exception("scheduler: leadership callback failed")

    def is_leader(self, verify: bool = True) -> bool:
        with self._lock:
            if self._leader and verify and not self._alive():
                log.warning("scheduler: leader connection lost; not running jobs")
                self._leader = False
                self._release()
            return self._leader

    # subclasses
    def _acquire(self) -> bool:
        raise NotImplementedError

    def _alive(self) -> bool:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError


class LocalCoordinator(_LeaderLoop):
    """SQLite: one process. An exclusive flock on `lock_path` makes any second process a standby.

    Claims are kept in a small file next to the lock (`.claims`), so a restart at 09:30 does not
    post Monday's 09:00 digest a second time.
    """

    KEEP = 2_000

    def __init__(self, lock_path: Path | None, poll_s: float = 5.0):
        super().__init__(poll_s)
        self.lock_path = lock_path
        self.claims_path = lock_path.with_name(lock_path.name + ".claims") if lock_path else None
        self._fd: int | None = None
        self._claims: dict[tuple[str, datetime], None] = {}
        if self.claims_path is not None and self.claims_path.is_file():
            for line in self.claims_path.read_text(encoding="utf-8", errors="replace").splitlines()[
                -self.KEEP :
            ]:
                job, _, stamp = line.partition("\t")
                with contextlib.suppress(ValueError):
                    self._claims[(job, datetime.fromisoformat(stamp))] = None

    def _acquire(self) -> bool:
        if self.lock_path is None:
            return True
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, PRIVATE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _alive(self) -> bool:
        return True

    def _release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None

    def claim(self, job: str, slot: datetime) -> bool:
        key = (job, slot)
        with self._lock:
            if key in self._claims:
                return False
            self._claims[key] = None
            if self.claims_path is not None:
                try:
                    if len(self._claims) > 2 * self.KEEP:
                        for old in list(self._claims)[: -self.KEEP]:
                            del self._claims[old]
                        lines = "".join(f"{j}\t{s.isoformat()}\n" for j, s in self._claims)
                        self.claims_path.write_text(lines, encoding="utf-8")
                    else:
                        with append_private(self.claims_path) as fh:
                            fh.write(f"{job}\t{slot.isoformat()}\n")
                except OSError as exc:
                    log.warning("scheduler: cannot write %s: %s", self.claims_path, exc)
            return True


class PostgresCoordinator(_LeaderLoop):
    """PostgreSQL: an advisory lock and the claim rows, on one dedicated psycopg connection."""

    def __init__(
        self,
        dsn: str,
        *,
        key: str = "triage-bot-scheduler",
        schema: str | None = None,
        poll_s: float = 5.0,
        runner_id: str = "",
        connect_timeout: int = 5,
    ):
        super().__init__(poll_s)
        self.dsn = dsn
        self.schema = schema
        self.runner_id = runner_id or f"{socket.gethostname()}-{os.getpid()}"
        self.connect_timeout = connect_timeout
        digest = hashlib.sha256(f"{key}/{schema or ''}".encode()).digest()
        self.lock_key = int.from_bytes(digest[:8], "big", signed=True)
        self._conn: Any = None
        self._table = f'"{schema}".{CLAIMS_TABLE}' if schema else CLAIMS_TABLE
        self.degraded = False  # leading while the database cannot be reached

    def _connect(self) -> Any:
        import psycopg

        conn = psycopg.connect(
            self.dsn,
            autocommit=True,
            connect_timeout=self.connect_timeout,
            keepalives=1,
            keepalives_idle=30,
            keepalives_interval=10,
            keepalives_count=3,
            application_name=f"triage-bot scheduler {self.runner_id}"[:63],
            options="-c statement_timeout=5000",  # a ping or claim never hangs the leader loop
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} (job varchar(64) NOT NULL, slot timestamptz NOT NULL, "
            "runner varchar(128) NOT NULL, claimed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (job, slot))"
        )
        return conn

    def _acquire(self) -> bool:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self.lock_key,)).fetchone()
        return bool(row and row[0])

    def _alive(self) -> bool:
        """Is this replica still the leader? When the lock connection is gone, reconnect: the lock
        again means yes, another replica holding it means no, and a database that cannot be reached
        at all means yes, *degraded*: nobody can take the lock from us meanwhile, and the health
        checks must go on through an outage of the very database that coordinates them."""
        if self._conn is not None and not self._conn.closed:
            try:
                self._conn.execute("SELECT 1")
                return True
            except Exception:
                self._drop_connection()
        try:
            self._conn = self._connect()
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (self.lock_key,)).fetchone()
        except Exception:
            self._drop_connection()
            if not self.degraded:
                log.warning(
                    "scheduler: the database is away; this leader keeps running jobs until it is back"
                )
            self.degraded = True
            return True
        if row and row[0]:
            if self.degraded:
                log.info("scheduler: the database is back and the lock is ours again")
            self.degraded = False
            return True
        self.degraded = False
        log.warning("scheduler: another replica took the leader lock while our connection was gone")
        return False

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None

    def _release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()  # the server releases the session's advisory lock
            self._conn = None
        self.degraded = False

    def claim(self, job: str, slot: datetime) -> bool:
        with self._lock:
            if not self._leader:
                return False
            if self.degraded or self._conn is None:
                return True  # a degraded leader: no claim row can be written, and no other replica runs
            try:
                row = self._conn.execute(
                    f"INSERT INTO {self._table} (job, slot, runner) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING RETURNING 1",
                    (job, slot, self.runner_id),
                ).fetchone()
            except Exception as exc:
                log.warning("scheduler: claim of %s@%s failed: %s", job, slot.isoformat(), exc)
                self._drop_connection()
                if self._alive() and self._leader:
                    return self.degraded  # run it only when the database is away; else the next slot
                self._leader = False
                self._release()
                return False
            return row is not None

    def prune_claims(self, older_than: timedelta = timedelta(days=30)) -> int:
        with self._lock:
            if self._conn is None:
                return 0
            cur = self._conn.execute(f"DELETE FROM {self._table} WHERE slot < now() - %s", (older_than,))
            return cur.rowcount or 0


def coordinator_for(database_url: str, settings: SchedulerSettings) -> LocalCoordinator | PostgresCoordinator:
    """PostgreSQL gets the advisory-lock leader; SQLite (or anything else) one local process."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url.replace("postgres://", "postgresql://", 1))
    if url.get_backend_name() == "postgresql":
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresCoordinator(dsn, poll_s=settings.leader_poll_s, runner_id=settings.runner_id)
    db = url.database
    lock = Path(f"{db}.scheduler.lock") if db and db != ":memory:" else None
    return LocalCoordinator(lock, poll_s=settings.leader_poll_s)
