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

from triage_bot.scheduler.jobs import SLOT_EPOCH, JobSpec, TriageScheduler, default_jobs, slot_of
from triage_bot.scheduler.leadership import (
    CLAIMS_TABLE,
    Coordinator,
    LocalCoordinator,
    PostgresCoordinator,
    claims_metadata,
    claims_table,
    coordinator_for,
)
from triage_bot.scheduler.settings import SchedulerConfigError, SchedulerSettings
from triage_bot.scheduler.wiring import build_scheduler

__all__ = [
    "CLAIMS_TABLE",
    "SLOT_EPOCH",
    "Coordinator",
    "JobSpec",
    "LocalCoordinator",
    "PostgresCoordinator",
    "SchedulerConfigError",
    "SchedulerSettings",
    "TriageScheduler",
    "build_scheduler",
    "claims_metadata",
    "claims_table",
    "coordinator_for",
    "default_jobs",
    "slot_of",
]
