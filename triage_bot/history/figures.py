"""The digest's figures over a period: incidents by engine and signature, MTTA and MTTR, uptime.

Read-only SQL over the history's tables, kept apart from the lookups an answer makes (queries.py).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from triage_bot.history import sanitize as clean
from triage_bot.history.models import EngineCheck, Feedback, Incident, Occurrence
from triage_bot.history.queries import _Json


@dataclass(frozen=True, slots=True)
class GroupCount(_Json):
    """Counts for one engine (signature_id None) or one signature on one engine, in a period."""

    engine: str
    signature_id: str | None
    incidents: int = 0  # opened in the period
    new: int = 0
    recurring: int = 0
    occurrences: int = 0  # seen in the period, whenever their incident opened


@dataclass(frozen=True, slots=True)
class Uptime(_Json):
    engine: str
    checks: int
    up: int
    degraded: int
    down: int
    unknown: int
    ratio: float | None  # (up + degraded) / (up + degraded + down); unknown results are left out
    maintenance: int = 0  # checks inside a maintenance window: planned, so not counted at all


@dataclass(frozen=True, slots=True)
class DigestNumbers(_Json):
    start: datetime
    end: datetime
    incidents: int  # opened in [start, end)
    new: int
    recurring: int
    occurrences: int
    still_open: int  # opened in the period and not resolved by its end
    mtta_seconds: float | None  # mean first-response time of incidents acknowledged in the period
    mtta_median_seconds: float | None
    mtta_samples: int
    mttr_seconds: float | None  # mean open-to-resolved time of incidents resolved in the period
    mttr_median_seconds: float | None
    mttr_samples: int
    by_engine: list[GroupCount] = field(default_factory=list)
    by_signature: list[GroupCount] = field(default_factory=list)
    top_recurring: list[GroupCount] = field(default_factory=list)
    uptime: list[Uptime] = field(default_factory=list)


def digest_numbers(session: Session, start: datetime, end: datetime, top: int = 5) -> DigestNumbers:
    """The weekly digest's figures for [start, end); call twice for a trend against last week."""
    start, end = clean.period(start, end)
    opened = (Incident.first_seen >= start) & (Incident.first_seen < end)

    # Incidents opened in the period, by engine, signature and new/recurring.
    groups: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for eng, sig, recurring, n in session.execute(
        select(Incident.engine, Incident.signature_id, Incident.is_recurring, func.count(Incident.id))
        .where(opened)
        .group_by(Incident.engine, Incident.signature_id, Incident.is_recurring)
    ):
        counts = groups[(eng, sig)]
        counts["incidents"] += n
        counts["recurring" if recurring else "new"] += n

    # Occurrences in the period, whenever their incident opened. Counting per incident first reads
    # only the (seen_at, incident_id) index; joining the few incidents afterwards is cheap.
    per_incident = (
        select(Occurrence.incident_id, func.count().label("n"))
        .where(Occurrence.seen_at >= start, Occurrence.seen_at < end)
        .group_by(Occurrence.incident_id)
        .subquery()
    )
    for eng, sig, n in session.execute(
        select(Incident.engine, Incident.signature_id, func.sum(per_incident.c.n))
        .join(per_incident, per_incident.c.incident_id == Incident.id)
        .group_by(Incident.engine, Incident.signature_id)
    ):
        groups[(eng, sig)]["occurrences"] += int(n)

    by_signature = [GroupCount(eng, sig, **counts) for (eng, sig), counts in groups.items()]
    by_signature.sort(key=lambda g: (-g.incidents, -g.occurrences, g.engine, g.signature_id or ""))
    engines: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for g in by_signature:
        for name in ("incidents", "new", "recurring", "occurrences"):
            engines[g.engine][name] += getattr(g, name)
    by_engine = [GroupCount(eng, None, **counts) for eng, counts in engines.items()]
    by_engine.sort(key=lambda g: (-g.incidents, -g.occurrences, g.engine))
    top_recurring = sorted(
        (g for g in by_signature if g.recurring),
        key=lambda g: (-g.recurring, -g.occurrences, g.signature_id or ""),
    )[:top]

    still_open = session.scalar(
        select(func.count(Incident.id)).where(
            opened, (Incident.resolved_at.is_(None)) | (Incident.resolved_at >= end)
        )
    )
    mtta = _durations(session, Incident.acknowledged_at, start, end)
    mttr = _durations(session, Incident.resolved_at, start, end)

    return DigestNumbers(
        start=start,
        end=end,
        incidents=sum(g.incidents for g in by_engine),
        new=sum(g.new for g in by_engine),
        recurring=sum(g.recurring for g in by_engine),
        occurrences=sum(g.occurrences for g in by_engine),
        still_open=still_open or 0,
        mtta_seconds=statistics.fmean(mtta) if mtta else None,
        mtta_median_seconds=statistics.median(mtta) if mtta else None,
        mtta_samples=len(mtta),
        mttr_seconds=statistics.fmean(mttr) if mttr else None,
        mttr_median_seconds=statistics.median(mttr) if mttr else None,
        mttr_samples=len(mttr),
        by_engine=by_engine,
        by_signature=by_signature,
        top_recurring=top_recurring,
        uptime=uptime(session, start, end),
    )


def _durations(session: Session, column: Any, start: datetime, end: datetime) -> list[float]:
    """Seconds from first seen to `column` for incidents whose `column` falls in the period."""
    rows = session.execute(select(Incident.first_seen, column).where(column >= start, column < end))
    return [max(0.0, (done - first).total_seconds()) for first, done in rows]


def uptime(session: Session, start: datetime, end: datetime) -> list[Uptime]:
    """Per engine, the share of checks that found it serving (up or degraded) in [start, end).

    Checks run at a fixed interval, so the share of checks is the share of time. Checks made inside
    a maintenance window (the monitor marks them) are planned downtime and count neither way.
    """
    start, end = clean.period(start, end)
    states: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    planned = EngineCheck.details["maintenance"].as_boolean()
    for eng, state, maintenance, n in session.execute(
        select(EngineCheck.engine, EngineCheck.state, planned, func.count())
        .where(EngineCheck.checked_at >= start, EngineCheck.checked_at < end)
        .group_by(EngineCheck.engine, EngineCheck.state, planned)
    ):
        states[eng]["maintenance" if maintenance else state] += n
    result = []
    for eng in sorted(states):
        s = states[eng]
        known = s["up"] + s["degraded"] + s["down"]
        result.append(
            Uptime(
                engine=eng,
                checks=known + s["unknown"] + s["maintenance"],
                up=s["up"],
                degraded=s["degraded"],
                down=s["down"],
                unknown=s["unknown"],
                ratio=(s["up"] + s["degraded"]) / known if known else None,
                maintenance=s["maintenance"],
            )
        )
    return result


NONE_OF_THEM = "none"  # what a wrong-match report holds when no known signature was right


@dataclass(frozen=True, slots=True)
class WrongMatch(_Json):
    """One signature people reported as a wrong answer in a period, and what they chose instead."""

    signature_id: str
    reports: int
    chosen: dict[str, int]  # the right signature id (or "none") -> how many chose it


def wrong_matches(session: Session, start: datetime, end: datetime) -> list[WrongMatch]:
    """Wrong-match reports given in [start, end), by the signature the bot had answered with.

    The digest shows them so that a signature that keeps being wrong is seen by the people who
    write the knowledge base; each report counts once per person and incident (a second vote
    replaces the first)."""
    start, end = clean.period(start, end)
    chosen: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for said, right in session.execute(
        select(Incident.signature_id, Feedback.correct_signature_id)
        .join(Incident, Incident.id == Feedback.incident_id)
        .where(Feedback.kind == "wrong_match", Feedback.updated_at >= start, Feedback.updated_at < end)
    ):
        chosen[said][right or NONE_OF_THEM] += 1
    found = [
        WrongMatch(said, sum(picks.values()), dict(sorted(picks.items(), key=lambda kv: (-kv[1], kv[0]))))
        for said, picks in chosen.items()
    ]
    return sorted(found, key=lambda w: (-w.reports, w.signature_id))


@dataclass(frozen=True, slots=True)
class FeedbackRecord(_Json):
    """One piece of feedback with what it was about: material for the knowledge base's authors."""

    incident_id: int
    kind: str
    signature_id: str  # what the bot answered
    correct_signature_id: str | None  # for wrong_match: what the person chose (None: none of them)
    engine: str
    user_id: str
    at: datetime
    excerpt: str  # the incident's first paste, as the history keeps it (masked and capped)


def feedback_records(session: Session, since: datetime, kinds: tuple[str, ...]) -> list[FeedbackRecord]:
    """The feedback given since `since`, oldest first, with each incident's first excerpt."""
    since = clean.as_utc(since, "since")
    first = (
        select(Occurrence.incident_id, func.min(Occurrence.id).label("first_id"))
        .group_by(Occurrence.incident_id)
        .subquery()
    )
    rows = session.execute(
        select(Feedback, Incident.signature_id, Incident.engine, Occurrence.excerpt)
        .join(Incident, Incident.id == Feedback.incident_id)
        .outerjoin(first, first.c.incident_id == Incident.id)
        .outerjoin(Occurrence, Occurrence.id == first.c.first_id)
        .where(Feedback.updated_at >= since, Feedback.kind.in_(kinds))
        .order_by(Feedback.updated_at, Feedback.id)
    )
    return [
        FeedbackRecord(
            f.incident_id, f.kind, sig, f.correct_signature_id, engine, f.user_id, f.updated_at, excerpt or ""
        )
        for f, sig, engine, excerpt in rows
    ]
