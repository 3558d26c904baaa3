"""Retention: drop old occurrences, checks, event ids and expired mutes; keep incident summaries.

An incident row carries its own counts and first/last times, so the history and "seen before?"
stay right after its occurrences are gone; only digests of pruned periods lose their occurrence
counts. Deletes run in batches, each its own transaction, so pruning a million rows never holds
the write lock long enough to stall the bot (SQLite has a single writer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from triage_bot.history import sanitize as clean
from triage_bot.history.db import rowcount
from triage_bot.history.models import EngineCheck, Mute, Occurrence, SlackEvent


@dataclass(frozen=True, slots=True)
class PruneResult:
    occurrences: int
    engine_checks: int
    slack_events: int
    mutes: int


def prune(
    run: Callable[[Callable[[Session], int]], int],
    days: float,
    *,
    event_days: float = 7,
    now: datetime | None = None,
    batch: int = 10_000,
) -> PruneResult:
    """Delete rows older than `days` (Slack event ids after `event_days`: retries stop within hours).

    `run(fn)` runs `fn(session)` in a transaction of its own and returns its result.
    """
    now = now or clean.utcnow()
    cutoff = clean.days_back(days, now)
    event_cutoff = clean.days_back(min(days, event_days), now)
    assert cutoff is not None and event_cutoff is not None

    def batched(model: Any, key: Any, column: Any, before: datetime) -> int:
        oldest = select(key).where(column < before).limit(batch).scalar_subquery()
        stmt = delete(model).where(key.in_(oldest)).execution_options(synchronize_session=False)
        total = 0
        while True:
            n = run(lambda session: rowcount(session.execute(stmt)))
            total += n
            if n < batch:
                return total

    return PruneResult(
        occurrences=batched(Occurrence, Occurrence.id, Occurrence.seen_at, cutoff),
        engine_checks=batched(EngineCheck, EngineCheck.id, EngineCheck.checked_at, cutoff),
        slack_events=batched(SlackEvent, SlackEvent.event_id, SlackEvent.received_at, event_cutoff),
        mutes=batched(Mute, Mute.id, Mute.until, cutoff),
    )
