"""Triage a paste and record it in the history: the one use case Slack, the CLI and the console share.

It returns the answer together with what the history says about it (the incident, whether an open
one was seen again, the earlier incidents of the same failure, the mute), all read in the
transaction that recorded it. The answer never waits on the history's health: when recording
fails, the answer comes back with the reason it was not recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from triage_bot.answer import Answer
from triage_bot.core import Triager

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore, Recall

log = logging.getLogger(__name__)

OPEN_STATUSES = ("open", "acknowledged")
GUESS_CONFIDENCE = 0.5  # the command-line surfaces show an answer below this, but file no incident for it


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a paste came from: the fields of its record."""

    source: str  # slack | cli | console
    channel: str | None = None
    thread_ts: str | None = None
    user: str | None = None
    target: str | None = None  # default: the channel
    key: str | None = None  # the request's once-only key: a redelivery joins the occurrence it made


@dataclass(frozen=True, slots=True)
class Outcome:
    """An answer and its record."""

    answer: Answer
    recall: Recall | None = None  # None: nothing was recorded
    not_recorded: str = ""  # why, when it should have been

    @property
    def incident_id(self) -> int | None:
        return None if self.recall is None else self.recall.result.incident_id

    def record_line(self) -> str:
        """What a terminal says of the record, or "" when there is nothing to say (a new incident)."""
        if self.not_recorded:
            return f"warning: not recorded in the history ({self.not_recorded})"
        result = None if self.recall is None else self.recall.result
        if result is None:
            return ""
        if result.spooled:
            return "note: the database is unreachable; the record waits in the local spool"
        if result.is_new:
            return ""
        return f"seen before: incident #{result.incident_id}, {result.occurrence_count} occurrences"

    @property
    def repeats_open_incident(self) -> bool:
        """The paste joined an incident that is still open, as more than its first occurrence."""
        result = None if self.recall is None else self.recall.result
        return (
            result is not None
            and not result.is_new
            and result.status in OPEN_STATUSES
            and result.occurrence_count > 1
        )


def triage_and_record(
    triager: Triager,
    history: HistoryStore | Callable[[], HistoryStore | None] | None,
    text: str | bytes,
    origin: Origin,
    *,
    record: bool | Callable[[Answer], bool] = True,
    min_confidence: float = 0.0,
) -> Outcome:
    """Answer `text`; record a match of at least `min_confidence` when there is a history and
    `record` says so (a predicate decides from the answer: a channel records only what it answers).
    `history` may be a function that opens it: it is called only when there is something to record."""
    answer = triager.triage(text)
    m = answer.match
    wanted = record(answer) if callable(record) else record
    if not wanted or history is None or m is None or m.confidence < min_confidence:
        return Outcome(answer)
    if callable(history):
        try:
            history = history()
        except Exception as exc:
            return Outcome(answer, not_recorded=str(exc) or type(exc).__name__)
        if history is None:
            return Outcome(answer)
    from triage_bot.history import Sighting

    observation = Sighting(
        signature_id=m.id,
        engine=m.engine,
        target=origin.target,
        severity=m.severity,
        source=origin.source,
        channel=origin.channel,
        thread_ts=origin.thread_ts,
        user=origin.user,
        excerpt=text,
        confidence=m.confidence,
        values=dict(m.values),
    )
    if origin.key:
        observation = replace(observation, key=origin.key)
    try:
        return Outcome(answer, history.record_and_recall(observation))
    except Exception as exc:  # the answer matters more than its record
        log.error("could not record %s in the history: %s", m.id, exc)
        return Outcome(answer, not_recorded=str(exc) or type(exc).__name__)
