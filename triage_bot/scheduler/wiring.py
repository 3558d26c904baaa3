"""The process wiring: a scheduler built from the settings, the history, the engines file and the
outputs (the Slack notifier and the digest poster, handed in by the adapter)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from triage_bot.health.alerts import Notifier
from triage_bot.scheduler.jobs import TriageScheduler, default_jobs
from triage_bot.scheduler.leadership import PostgresCoordinator, coordinator_for
from triage_bot.scheduler.settings import SchedulerSettings

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore

log = logging.getLogger(__name__)


class Outputs(TypedDict, total=False):
    """What the process wiring hands the scheduler: where alerts go and how the digest is posted."""

    notifier: Notifier
    digest_poster: Callable[[], object]


def build_scheduler(
    *,
    database_url: str | None = None,
    engines_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    notifier: Notifier | None = None,
    digest_poster: Callable[[], object] | None = None,
    outputs: Callable[[HistoryStore], Outputs] | None = None,
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
