"""The jobs and their slots: health checks every N seconds, the weekly digest, daily pruning, each
run for the slot its trigger names, and only when this replica leads and wins the claim."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from triage_bot.scheduler.leadership import Coordinator
from triage_bot.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)

SLOT_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # interval slots are aligned to this on every replica


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
    check: Callable[[], object] | None,
    digest: Callable[[], object] | None,
    prune: Callable[[], object] | None,
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
