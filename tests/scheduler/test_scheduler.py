"""Exactly once per slot across replicas: two schedulers on one PostgreSQL, then a take-over.

Mirrors reliability.md §7 #5 (leader failover: runs per slot exactly 1, slots missed 0) at test
scale: a 1 s interval, two real schedulers (each with its own dedicated lock connection) in one
process, the leader stopped half-way. Also: misfire grace is set deliberately, and SQLite runs
one scheduler per database file.
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.postgres_schema import PG_DSN
from triage_bot.scheduler import (
    LocalCoordinator,
    PostgresCoordinator,
    SchedulerConfigError,
    SchedulerSettings,
    TriageScheduler,
    default_jobs,
    slot_of,
)
from triage_bot.testing.waiting import wait_until


def _replica(
    name: str, schema: str, log: list[tuple[str, datetime]], lock: threading.Lock
) -> TriageScheduler:
    def job() -> None:
        with lock:
            log.append((name, datetime.now(UTC)))

    settings = SchedulerSettings(check_interval_s=1)
    coordinator = PostgresCoordinator(PG_DSN, schema=schema, poll_s=0.2, runner_id=name)
    return TriageScheduler(coordinator, default_jobs(settings, check=job, digest=None, prune=None))


def test_two_schedulers_run_each_check_once_and_one_takes_over(pg_schema: str) -> None:
    log: list[tuple[str, datetime]] = []
    lock = threading.Lock()
    a = _replica("A", pg_schema, log, lock)
    b = _replica("B", pg_schema, log, lock)
    a.start()
    assert wait_until(a.coordinator.is_leader, 30)  # A leads first, so the hand-over below is from A to B
    b.start()
    try:
        assert wait_until(lambda: len(a.runs) >= 3, 60), "A never ran three slots"
        a.shutdown()  # closes A's lock connection: the server releases the advisory lock
        stopped_at = datetime.now(UTC)
        assert wait_until(lambda: len(b.runs) >= 3, 60), "B never took over"
    finally:
        a.shutdown()
        b.shutdown()
    runs = [("A", slot) for _, slot in a.runs] + [("B", slot) for _, slot in b.runs]
    slots = Counter(slot for _, slot in runs)
    assert all(n == 1 for n in slots.values()), f"a slot ran twice: {slots}"
    a_slots = [s for r, s in runs if r == "A"]
    b_slots = [s for r, s in runs if r == "B"]
    assert max(a_slots) < min(b_slots), "B ran nothing before A stopped"
    # the hand-over loses no slot: B runs the one after A's last (catch-up covers a slot A missed)
    assert min(b_slots) - max(a_slots) == timedelta(seconds=1), (max(a_slots), min(b_slots))
    assert min(b_slots) <= stopped_at + timedelta(seconds=1)
    # the claim rows agree with what ran
    import psycopg

    with psycopg.connect(PG_DSN) as conn:
        claimed = conn.execute(
            f'SELECT runner, count(*) FROM "{pg_schema}".triage_scheduler_runs GROUP BY runner'
        ).fetchall()
    assert dict(claimed) == {"A": len(a_slots), "B": len(b_slots)}
    assert len(log) == len(runs)


def test_a_leader_that_loses_its_lock_to_another_replica_stops_running_jobs(pg_schema: str) -> None:
    import psycopg

    ran: list[datetime] = []
    coordinator = PostgresCoordinator(PG_DSN, schema=pg_schema, poll_s=5, runner_id="solo")
    scheduler = TriageScheduler(
        coordinator,
        default_jobs(
            SchedulerSettings(check_interval_s=1),
            check=lambda: ran.append(datetime.now(UTC)),
            digest=None,
            prune=None,
        ),
    )
    other = PostgresCoordinator(PG_DSN, schema=pg_schema, poll_s=0.2, runner_id="other")
    scheduler.start()
    try:
        assert wait_until(lambda: len(ran) >= 1, 30)
        assert coordinator.is_leader()
        with psycopg.connect(PG_DSN, autocommit=True) as admin:  # an outage of that one connection
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                ("triage-bot scheduler solo",),
            )
        other.start()  # ... during which another replica takes the lock
        assert wait_until(other.is_leader, 30)
        # the next slot's check before running finds the lock gone to the other replica
        assert wait_until(lambda: not coordinator.is_leader(verify=False), 30)
        before = len(ran)
        next_slot = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
        assert scheduler.run_slot("health_check", next_slot) is False
        assert len(ran) == before, "a job ran without the lock"
    finally:
        scheduler.shutdown()
        other.stop()


def test_a_leader_whose_connection_drops_takes_the_free_lock_again(pg_schema: str) -> None:
    import psycopg

    coordinator = PostgresCoordinator(PG_DSN, schema=pg_schema, poll_s=5, runner_id="solo2")
    coordinator.start()
    try:
        assert coordinator.is_leader()
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                ("triage-bot scheduler solo2",),
            )
        assert coordinator.is_leader(verify=True) and not coordinator.degraded  # reconnected, lock re-taken
    finally:
        coordinator.stop()


def test_health_checks_go_on_while_the_coordinating_database_is_away(own_postgres) -> None:
    """The leader keeps running its jobs through a PostgreSQL outage (degraded); a standby does not."""
    dsn = own_postgres.url.replace("postgresql+psycopg://", "postgresql://")
    ran: dict[str, list[datetime]] = {"a": [], "b": []}

    def scheduler(name: str) -> TriageScheduler:
        coordinator = PostgresCoordinator(dsn, poll_s=0.2, runner_id=name, connect_timeout=2)
        return TriageScheduler(
            coordinator,
            default_jobs(
                SchedulerSettings(check_interval_s=1),
                check=lambda: ran[name].append(datetime.now(UTC)),
                digest=None,
                prune=None,
            ),
        )

    a, b = scheduler("a"), scheduler("b")
    a.start()
    assert wait_until(a.coordinator.is_leader, 30)
    b.start()
    try:
        assert wait_until(lambda: len(ran["a"]) >= 2, 30)
        own_postgres.stop("immediate")
        during = len(ran["a"])
        assert wait_until(lambda: len(ran["a"]) >= during + 3, 60), "no health check ran during the outage"
        assert a.coordinator.degraded and not b.coordinator.is_leader(verify=False)
        assert ran["b"] == []
        own_postgres.start()
        assert wait_until(lambda: not a.coordinator.degraded, 60), "the leader did not take its lock back"
        after = len(ran["a"])
        assert wait_until(lambda: len(ran["a"]) >= after + 2, 30)
    finally:
        a.shutdown()
        b.shutdown()
    assert ran["b"] == []  # one leader throughout: the standby never ran a slot
    slots = [slot for _, slot in a.runs]
    assert len(slots) == len(set(slots))


def test_sqlite_allows_one_scheduler_per_database_file(tmp_path: Path) -> None:
    lock = tmp_path / "history.sqlite3.scheduler.lock"
    first, second = LocalCoordinator(lock, poll_s=0.1), LocalCoordinator(lock, poll_s=0.1)
    first.start()
    second.start()
    try:
        assert first.is_leader() and not second.is_leader()
        first.stop()
        assert wait_until(second.is_leader, 30), "the standby takes over when the first process stops"
    finally:
        first.stop()
        second.stop()


def test_misfire_grace_and_slots_are_deliberate() -> None:
    settings = SchedulerSettings(check_interval_s=30, digest_cron="0 9 * * mon", timezone="Europe/Berlin")
    jobs = {
        j.id: j for j in default_jobs(settings, check=lambda: None, digest=lambda: None, prune=lambda: None)
    }
    assert jobs["health_check"].misfire_grace_s == 15
    assert jobs["weekly_digest"].misfire_grace_s == 6 * 3600
    # the digest's slot is Monday 09:00 Berlin time, whichever replica computes it and however late (within grace)
    monday_late = datetime(2025, 6, 2, 7, 40, tzinfo=UTC)  # 09:40 CEST
    slot = slot_of(jobs["weekly_digest"].trigger, monday_late, jobs["weekly_digest"].misfire_grace_s)
    assert slot == datetime(2025, 6, 2, 7, 0, tzinfo=UTC)
    # interval slots are aligned on every replica
    now = datetime(2025, 6, 2, 7, 40, 31, 200_000, tzinfo=UTC)
    assert slot_of(jobs["health_check"].trigger, now, 15) == datetime(2025, 6, 2, 7, 40, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"TRIAGE_CHECK_INTERVAL_S": "0"}, "TRIAGE_CHECK_INTERVAL_S"),
        ({"TRIAGE_DIGEST_CRON": "every monday"}, "TRIAGE_DIGEST_CRON"),
        ({"TRIAGE_TIMEZONE": "Mars/Olympus"}, "TRIAGE_TIMEZONE"),
        ({"TRIAGE_CHECK_INTERVAL_S": "fast"}, "TRIAGE_CHECK_INTERVAL_S"),
    ],
)
def test_bad_scheduler_settings_fail_fast_naming_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(SchedulerConfigError, match=needle):
        SchedulerSettings.from_env(env)


def test_a_failing_job_does_not_stop_the_scheduler() -> None:
    calls: list[int] = []

    def flaky() -> None:
        calls.append(1)
        raise RuntimeError("engine probe exploded")

    scheduler = TriageScheduler(
        LocalCoordinator(None, poll_s=0.1),
        default_jobs(SchedulerSettings(check_interval_s=1), check=flaky, digest=None, prune=None),
    )
    scheduler.start()
    try:
        assert wait_until(lambda: scheduler.errors >= 3, 60), "the scheduler stopped after a failing run"
    finally:
        scheduler.shutdown()  # waits for a running job, so the counts below are final
    assert scheduler.errors == len(calls)


def test_sqlite_claims_survive_a_restart(tmp_path: Path) -> None:
    lock = tmp_path / "db.sqlite3.scheduler.lock"
    slot = datetime(2025, 6, 2, 7, 0, tzinfo=UTC)
    first = LocalCoordinator(lock)
    assert first.claim("weekly_digest", slot)
    again = LocalCoordinator(lock)  # the process restarted at 09:30
    assert not again.claim("weekly_digest", slot)
    assert again.claim("weekly_digest", slot + timedelta(days=7))


def test_a_run_that_overruns_its_interval_skips_slots_instead_of_piling_up() -> None:
    """reliability.md §7 #7: block the job for several intervals; no overlap, no burst afterwards."""
    running, peak, starts = [0], [0], []
    guard = threading.Lock()
    release = threading.Event()

    def job() -> None:
        with guard:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            starts.append(datetime.now(UTC))
        if len(starts) == 1:
            release.wait(60)  # overrun: the next slots find it still running
        with guard:
            running[0] -= 1

    scheduler = TriageScheduler(
        LocalCoordinator(None, poll_s=0.1),
        default_jobs(SchedulerSettings(check_interval_s=1), check=job, digest=None, prune=None),
    )
    scheduler.start()
    try:
        assert wait_until(lambda: scheduler.skipped >= 2, 60), "no slot found the job still running"
        released_at = datetime.now(UTC)
        release.set()
        assert wait_until(lambda: len(scheduler.runs) >= 3, 60)
    finally:
        release.set()
        scheduler.shutdown()
    assert peak[0] == 1, "two runs of the same job overlapped"
    assert len(starts) == len(scheduler.runs)
    _first, *later = [slot for _, slot in scheduler.runs]
    # the slots inside the overrun were skipped, not queued: every later run is for a slot that
    # came due after the release, one run per slot (no burst of catch-up runs)
    assert later and all(slot > released_at - timedelta(seconds=1) for slot in later), (released_at, later)
    assert len(later) == len(set(later)) and later == sorted(later)
    assert all(started > released_at for started in starts[1:])
