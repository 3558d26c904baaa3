"""When the scheduled jobs run: the scheduler's part of the one settings system (triage_bot/settings.py)."""

from __future__ import annotations

import os
import socket
from datetime import tzinfo
from typing import ClassVar, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from pydantic import Field, model_validator

from triage_bot.settings import EnvSettings, env


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
