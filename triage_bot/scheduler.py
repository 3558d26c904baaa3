"""Scheduled jobs (APScheduler 3): health checks every N s, the weekly digest, daily pruning.

Every replica runs the same scheduler, but each run of a job happens once across all of them:

1. **Leader lock.** APScheduler 3 cannot share a job store, so replicas elect a leader instead.
   On PostgreSQL the leader holds `pg_try_advisory_lock` on a connection of its own, opened with
   psycopg directly and never part of SQLAlchemy's pool (a pooled connection moves or is recycled
   and the lock silently goes with it). Before every run the leader pings that connection; if it
   is gone the lock is gone too, and the replica stops running jobs at once. Standbys retry the
   lock every `leader_poll_s`. On SQLite there is one process: an exclusive flock on a file next
   to the database stands in for the lock, so a second process on the same file waits as standby.
2. **A (job, slot) claim row.** The slot is the run's scheduled fire time, derived from the trigger
   (not from the clock of whoever runs it), and the leader inserts (job, slot) before running; a
   unique key turns a second claim into a no-op. This closes the hand-over gap both ways: a new
   leader runs the current slot if the old one died before claiming it (catch-up), and never
   runs one the old leader already ran.

Misfire grace is set per job, deliberately (APScheduler's default of 1 s silently drops a run
when the process is briefly busy): half an interval for health checks (later than that, the next
slot is nearly due; coalesce folds the backlog into one run), 6 h for the digest (a replica that
restarts at 09:05 still posts Monday's), 12 h for pruning.
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, ClassVar, Protocol, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from pydantic import Field, model_validator
from sqlalchemy import Column, DateTime, MetaData, String, Table, func

from triage_bot import metrics
from triage_bot.private_files import PRIVATE, append_private
from triage_bot.settings import EnvSettings, env

log = logging.getLogger(__name__)

SLOT_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # interval slots are aligned to this on every replica
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


class SchedulerConfigError(ValueError):
    """A scheduler setting that cannot be used; the message names the variable."""


class SchedulerSettings(EnvSettings):
    """When the scheduled jobs run (triage_bot/settings.py: the one settings system)."""

    error: ClassVar[type[ValueError]] = SchedulerConfigError

    check_interval_s: float = env("TRIAGE_CHECK_INTERVAL_S", 30.0, ge=1, le=86_400)
    digest_cron: str = env("TRIAGE_DIGEST_CRON", "0 9 * * mon")
    digest_days: int = env("TRIAGE_DIGEST_DAYS", 7, ge=1, le=92)
    prune_cron: str = env("TRIAGE_PRUNE_CRON", "30 3 * * *")
    timezone: str = env("TRIAGE_TIMEZONE", "UTC")
    leader_poll_s: float = env("TRIAGE_LEADER_POLL_S", 5.0, ge=0.05, le=600)
    runner_id: str = Field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")

    @model_validator(mode="after")
    def _check(self) -> Self:
        tz = self.tz
        for name, expr in (("TRIAGE_DIGEST_CRON", self.digest_cron), ("TRIAGE_PRUNE_CRON", self.prune_cron)):
            try:
                CronTrigger.from_crontab(expr, timezone=tz)
            except ValueError as exc:
                raise SchedulerConfigError(f"{name}={expr!r}: {exc}") from None
        return self

    @property
    def tz(self) -> tzinfo:
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise SchedulerConfigError(f"TRIAGE_TIMEZONE={self.timezone!r} is not a known timezone") from None


# ---------------------------------------------------------------------- coordination


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


# ---------------------------------------------------------------------- jobs


@dataclass
class JobSpec:
    id: str
    func: Callable[[], Any]
    trigger: BaseTrigger
    misfire_grace_s: int


def slot_of(trigger: BaseTrigger, now: datetime, grace_s: float) -> datetime | None:
    """The scheduled fire time this run belongs to: the trigger's first time at or after now - grace."""
    slot: datetime | None = trigger.get_next_fire_time(None, now - timedelta(seconds=grace_s))
    if slot is None or slot > now + timedelta(seconds=0.5):
        return None
    return slot.astimezone(UTC)


class TriageScheduler:
    """APScheduler with every job wrapped in leadership + slot claim."""

    def __init__(
        self, coordinator: Coordinator, jobs: list[JobSpec], *, clock: Callable[[], datetime] | None = None
    ):
        self.coordinator = coordinator
        self.jobs = {j.id: j for j in jobs}
        self.clock = clock or (lambda: datetime.now(UTC))
        self.runs: list[tuple[str, datetime]] = []  # (job, slot) run here, for tests and /healthz
        self.errors = 0
        self.skipped = 0  # slots that found their job still running an earlier slot
        self._job_locks = {j.id: threading.Lock() for j in jobs}
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max(4, len(jobs) + 1))},
            job_defaults={"coalesce": True, "max_instances": 1},
            timezone=UTC,
        )
        self._scheduler.add_listener(
            self._on_event, EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES
        )
        coordinator.on_leadership(self._catch_up)

    def start(self) -> None:
        for spec in self.jobs.values():
            self._scheduler.add_job(
                self.run_slot,
                spec.trigger,
                args=[spec.id],
                id=spec.id,
                name=spec.id,
                misfire_grace_time=spec.misfire_grace_s,
                coalesce=True,
                max_instances=1,
                replace_existing=True,
            )
        self._scheduler.start()
        self.coordinator.start()

    def shutdown(self, wait: bool = True) -> None:
        with contextlib.suppress(Exception):
            self._scheduler.shutdown(wait=wait)
        self.coordinator.stop()

    def _on_event(self, event: JobEvent) -> None:
        if event.code == EVENT_JOB_MISSED:
            log.warning(
                "scheduler: run of %s at %s was missed (beyond its misfire grace)",
                event.job_id,
                getattr(event, "scheduled_run_time", None),
            )
        elif event.code == EVENT_JOB_MAX_INSTANCES:
            self.skipped += 1  # APScheduler's own max_instances rule; it logs the warning itself
        else:
            self.errors += 1

    def run_slot(self, job_id: str, slot: datetime | None = None) -> bool:
        """Run one slot of a job if this replica leads and nobody has claimed the slot yet."""
        spec = self.jobs[job_id]
        if slot is None:
            slot = slot_of(spec.trigger, self.clock(), spec.misfire_grace_s)
            if slot is None:
                return False
        lock = self._job_locks[job_id]
        if not lock.acquire(blocking=False):
            # still running an earlier slot (APScheduler's max_instances rule, also for catch-up runs):
            # skip this one rather than queue it behind, or runs would pile up after an overrun
            self.skipped += 1
            log.warning("scheduler: %s is still running; slot %s skipped", job_id, slot.isoformat())
            return False
        try:
            if not self.coordinator.is_leader(verify=True):
                return False
            if not self.coordinator.claim(job_id, slot):
                return False
            self.runs.append((job_id, slot))
            try:
                spec.func()
            except Exception:
                self.errors += 1
                log.exception(
                    "scheduler: job %s (slot %s) failed; the next slot runs as usual",
                    job_id,
                    slot.isoformat(),
                )
            return True
        finally:
            lock.release()

    def _catch_up(self) -> None:
        """On becoming leader: run each job's current slot if the previous leader did not."""
        now = self.clock()
        for spec in self.jobs.values():
            slot = slot_of(spec.trigger, now, spec.misfire_grace_s)
            if slot is not None:
                threading.Thread(
                    target=self.run_slot, args=(spec.id, slot), name=f"catch-up-{spec.id}", daemon=True
                ).start()


def default_jobs(
    settings: SchedulerSettings,
    *,
    check: Callable[[], Any] | None,
    digest: Callable[[], Any] | None,
    prune: Callable[[], Any] | None,
) -> list[JobSpec]:
    """The three jobs with their triggers and deliberately chosen misfire grace times."""
    jobs: list[JobSpec] = []
    if check is not None:
        interval = settings.check_interval_s
        jobs.append(
            JobSpec(
                "health_check",
                check,
                IntervalTrigger(seconds=interval, start_date=SLOT_EPOCH, timezone=UTC),
                misfire_grace_s=max(1, int(interval / 2)),
            )
        )
    if digest is not None:
        jobs.append(
            JobSpec(
                "weekly_digest",
                digest,
                CronTrigger.from_crontab(settings.digest_cron, timezone=settings.tz),
                misfire_grace_s=6 * 3600,
            )
        )
    if prune is not None:
        jobs.append(
            JobSpec(
                "retention_prune",
                prune,
                CronTrigger.from_crontab(settings.prune_cron, timezone=settings.tz),
                misfire_grace_s=12 * 3600,
            )
        )
    return jobs


def build_scheduler(
    *,
    database_url: str | None = None,
    engines_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    notifier: Any = None,
    digest_poster: Callable[[], Any] | None = None,
    outputs: Callable[[Any], dict[str, Any]] | None = None,
) -> TriageScheduler:
    """The bot's scheduler from the environment: engines.yaml, DATABASE_URL, timezone.

    `triage-bot serve` calls this and `start()`s it next to the Slack app, passing `outputs`
    (triage_bot/slack/outputs.py: the alert notifier and digest poster, built on the history store made
    here); the scheduler itself writes to no chat system. Health checks are skipped (with a log
    line) when no engines file exists; the digest job exists only with a digest poster.
    """
    from triage_bot.health.config import load_engines
    from triage_bot.health.monitor import HealthMonitor
    from triage_bot.history import HistoryStore
    from triage_bot.settings import Settings

    env = dict(os.environ if environ is None else environ)
    base = Settings.from_env(env)
    url = database_url or base.database_url
    settings = SchedulerSettings.from_env(env)
    store = HistoryStore.from_settings(base) if database_url is None else HistoryStore.from_url(url)

    if outputs is not None:  # the process wiring's writers (Slack): they need the store built here
        built = outputs(store)
        notifier = notifier or built.get("notifier")
        digest_poster = digest_poster or built.get("digest_poster")
    check = None
    path = engines_path or env.get("TRIAGE_ENGINES") or "engines.yaml"
    if Path(path).is_file():
        config = load_engines(path, env)
        monitor = HealthMonitor(config, store=store, notifier=notifier)
        check = monitor.run_once_sync
    else:
        log.warning("scheduler: no engines file at %s; health checks are off", path)

    coordinator = coordinator_for(url, settings)

    def prune() -> None:
        result = store.prune(base.retention_days)
        log.info("retention: %s", result)
        if isinstance(coordinator, PostgresCoordinator):
            coordinator.prune_claims()

    return TriageScheduler(
        coordinator, default_jobs(settings, check=check, digest=digest_poster, prune=prune)
    )
