"""Reads for the rest of the bot: history, "seen before?", mutes, posted messages, digest numbers.

Each function takes an open session and returns plain frozen dataclasses (no ORM objects escape,
so callers never trigger lazy loads on a closed session). Filters are always bound parameters;
text filters are cleaned the same way stored text is, so they compare like with like.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from triage_bot.history import sanitize as clean
from triage_bot.history.models import (
    INCIDENT_STATUSES,
    Incident,
    Mute,
    PostedMessage,
)
from triage_bot.history.operations import active_mute

MAX_LIMIT = 10_000


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


class _Json:
    """A frozen dataclass that prints as JSON (datetimes as ISO text); shared by the read models."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        as_dict: dict[str, Any] = _jsonable(asdict(self))  # type: ignore[call-overload]
        return as_dict


@dataclass(frozen=True, slots=True)
class IncidentSummary(_Json):
    id: int
    signature_id: str
    engine: str
    target: str
    status: str
    severity: str
    source: str
    first_seen: datetime
    last_seen: datetime
    occurrence_count: int
    is_recurring: bool
    previous_incident_id: int | None
    acknowledged_at: datetime | None
    acknowledged_by: str | None
    resolved_at: datetime | None
    resolved_by: str | None
    resolution: str | None
    active: bool  # still takes repeats (not resolved, window not passed at the last write)
    fingerprint: str


_SUMMARY_COLUMNS = (
    Incident.id,
    Incident.signature_id,
    Incident.engine,
    Incident.target,
    Incident.status,
    Incident.severity,
    Incident.source,
    Incident.first_seen,
    Incident.last_seen,
    Incident.occurrence_count,
    Incident.is_recurring,
    Incident.previous_incident_id,
    Incident.acknowledged_at,
    Incident.acknowledged_by,
    Incident.resolved_at,
    Incident.resolved_by,
    Incident.resolution,
    Incident.active_key.is_not(None),
    Incident.fingerprint,
)


def _summary(row: Any) -> IncidentSummary:
    return IncidentSummary(*row)


@dataclass(frozen=True, slots=True)
class SeenBefore(_Json):
    """What the history knows about a failure, for the line under an answer."""

    signature_id: str
    engine: str
    target: str | None  # None: counted across all targets
    incidents: int
    occurrences: int
    first_seen: datetime
    last_seen: datetime
    last_incident_id: int
    last_status: str
    resolved_incidents: int
    last_resolved_at: datetime | None = None
    last_resolved_by: str | None = None
    last_resolution: str | None = None


@dataclass(frozen=True, slots=True)
class MuteInfo(_Json):
    id: int
    signature_id: str | None
    engine: str | None
    until: datetime
    created_by: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class PostedRef(_Json):
    id: int
    channel: str
    ts: str
    kind: str
    incident_id: int | None
    engine: str | None


def _text(value: str | None) -> str | None:
    return None if value is None else clean.clean_text(value).strip()


def history(
    session: Session,
    *,
    engine: str | None = None,
    signature_id: str | None = None,
    target: str | None = None,
    status: str | None = None,
    days: float | None = None,
    limit: int = 100,
    now: datetime | None = None,
) -> list[IncidentSummary]:
    """Incidents seen in the last `days` (by last occurrence), newest first."""
    now = now or clean.utcnow()
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer between 1 and {MAX_LIMIT}, got {str(limit)[:40]!r}")
    stmt = select(*_SUMMARY_COLUMNS)
    since = clean.days_back(days, now)
    if since is not None:
        stmt = stmt.where(Incident.last_seen >= since)
    if engine is not None:
        stmt = stmt.where(Incident.engine == _text(engine))
    if signature_id is not None:
        stmt = stmt.where(Incident.signature_id == _text(signature_id))
    if target is not None:
        stmt = stmt.where(Incident.target == _text(target))
    if status is not None:
        wanted = clean.choice(status, "status", (*INCIDENT_STATUSES, "active"))
        stmt = stmt.where(
            Incident.active_key.is_not(None) if wanted == "active" else Incident.status == wanted
        )
    stmt = stmt.order_by(Incident.last_seen.desc(), Incident.id.desc()).limit(limit)
    return [_summary(row) for row in session.execute(stmt)]


def get_incident(session: Session, incident_id: int) -> IncidentSummary | None:
    row = session.execute(select(*_SUMMARY_COLUMNS).where(Incident.id == incident_id)).first()
    return None if row is None else _summary(row)


def seen_before(
    session: Session,
    signature_id: str,
    engine: str,
    target: str | None = None,
    *,
    exclude_incident_id: int | None = None,
) -> SeenBefore | None:
    """Earlier incidents of this failure: how often, when last, and how the last one was resolved.

    Pass the incident just recorded as `exclude_incident_id` to ask about the past only.
    """
    sig, eng, tgt = _text(signature_id), _text(engine), _text(target)
    where = [Incident.signature_id == sig, Incident.engine == eng]
    if tgt:
        where.append(Incident.target == tgt)
    if exclude_incident_id is not None:
        where.append(Incident.id != exclude_incident_id)
    count, occurrences, first, last = session.execute(
        select(
            func.count(Incident.id),
            func.coalesce(func.sum(Incident.occurrence_count), 0),
            func.min(Incident.first_seen),
            func.max(Incident.last_seen),
        ).where(*where)
    ).one()
    if not count:
        return None
    last_id, last_status = session.execute(
        select(Incident.id, Incident.status)
        .where(*where)
        .order_by(Incident.last_seen.desc(), Incident.id.desc())
        .limit(1)
    ).one()
    resolved_count = session.scalar(
        select(func.count(Incident.id)).where(*where, Incident.resolved_at.is_not(None))
    )
    resolved = session.execute(
        select(Incident.resolved_at, Incident.resolved_by, Incident.resolution)
        .where(*where, Incident.resolved_at.is_not(None))
        .order_by(Incident.resolved_at.desc())
        .limit(1)
    ).first()
    return SeenBefore(
        signature_id=sig or "",
        engine=eng or "",
        target=tgt or None,
        incidents=count,
        occurrences=int(occurrences),
        first_seen=first,
        last_seen=last,
        last_incident_id=last_id,
        last_status=last_status,
        resolved_incidents=resolved_count or 0,
        last_resolved_at=resolved[0] if resolved else None,
        last_resolved_by=resolved[1] if resolved else None,
        last_resolution=resolved[2] if resolved else None,
    )


def is_muted(
    session: Session, signature_id: str, engine: str, target: str | None = None, at: datetime | None = None
) -> MuteInfo | None:
    at = clean.as_utc(at, "at") if at else clean.utcnow()
    mute = active_mute(session, _text(signature_id) or "", _text(engine) or "", _text(target), at)
    if mute is None:
        return None
    return MuteInfo(mute.id, mute.signature_id, mute.engine, mute.until, mute.created_by, mute.reason)


def active_mutes(session: Session, at: datetime | None = None) -> list[MuteInfo]:
    at = clean.as_utc(at, "at") if at else clean.utcnow()
    rows = session.scalars(select(Mute).where(Mute.until > at).order_by(Mute.until))
    return [MuteInfo(m.id, m.signature_id, m.engine, m.until, m.created_by, m.reason) for m in rows]


def find_posted(
    session: Session, *, incident_id: int | None = None, engine: str | None = None, kind: str | None = None
) -> PostedRef | None:
    """The latest message the bot posted for an incident and/or engine (to update it in place)."""
    if incident_id is None and engine is None:
        raise ValueError("give incident_id or engine")
    stmt = select(
        PostedMessage.id,
        PostedMessage.channel,
        PostedMessage.ts,
        PostedMessage.kind,
        PostedMessage.incident_id,
        PostedMessage.engine,
    )
    if incident_id is not None:
        stmt = stmt.where(PostedMessage.incident_id == incident_id)
    if engine is not None:
        stmt = stmt.where(PostedMessage.engine == _text(engine))
    if kind is not None:
        stmt = stmt.where(PostedMessage.kind == _text(kind))
    row = session.execute(
        stmt.order_by(PostedMessage.created_at.desc(), PostedMessage.id.desc()).limit(1)
    ).first()
    return None if row is None else PostedRef(*row)
