"""The operations of the write side, each one transaction's work on arguments already cleaned.

They are what the spool replays by name (`table()`), so their arguments are plain JSON: an
operation spooled during an outage runs later exactly as it would have then.

Dedup, for an observation with fingerprint F seen at time t:
1. an incident whose `active_key` is F but whose `last_seen` is more than the window before t is
   retired (active_key = NULL): the repeat came too late to join it;
2. INSERT a new incident with active_key = F, ON CONFLICT (active_key) DO UPDATE count + 1.
The unique constraint makes concurrent writers converge on one row (PostgreSQL waits for the
first inserter and then takes the UPDATE branch; SQLite serialises writers). The window slides:
it counts from the last occurrence, so a failure that keeps repeating stays one incident.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, case, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from triage_bot.history.db import rowcount
from triage_bot.history.errors import IncidentNotFound
from triage_bot.history.models import (
    EngineCheck,
    Feedback,
    Incident,
    Mute,
    Occurrence,
    PostedMessage,
)
from triage_bot.history.records import RecordResult


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _dialect_insert(dialect: str) -> Any:
    """The dialect's INSERT, which has on_conflict_do_update / do_nothing (the upserts need it)."""
    if dialect == "postgresql":
        return postgresql.insert
    if dialect == "sqlite":
        return sqlite.insert
    raise ValueError(f"the incident history runs on SQLite or PostgreSQL, not {dialect}")


def insert_for(session: Session) -> Any:
    """The dialect's INSERT (with ON CONFLICT) for this session's database."""
    return _dialect_insert(session.get_bind().dialect.name)


def _upsert_returning_id(
    session: Session, model: Any, values: dict[str, Any], key: list[Any], replace: list[str]
) -> int:
    """INSERT, or on a clash of `key` replace the `replace` columns (and updated_at); return the row id.

    One statement, so two writers racing on the same key end with one row.
    """
    stmt = insert_for(session)(model).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=key,
        set_={name: getattr(stmt.excluded, name) for name in [*replace, "updated_at"]},
    ).returning(model.id)
    return int(session.execute(stmt).scalar_one())


def _mute_covers(at: Any, signature_id: Any, engines: Any) -> tuple[Any, ...]:
    """A mute applies when it has not ended and each of its scopes (signature, engine) is empty or
    matches; an engine scope matches the incident's engine kind or its target (the instance)."""
    m = Mute.__table__.c
    return (
        m.until > at,
        or_(m.signature_id.is_(None), m.signature_id == signature_id),
        or_(m.engine.is_(None), m.engine.in_(engines)),
    )


def active_mute(
    session: Session, signature_id: str, engine: str, target: str | None, at: datetime
) -> Mute | None:
    """The mute covering this signature/engine at `at`, the one ending last first."""
    engines = [engine] if target is None else [engine, target]
    stmt = select(Mute).where(*_mute_covers(at, signature_id, engines)).order_by(Mute.until.desc()).limit(1)
    return session.scalars(stmt).first()


@dataclass(frozen=True)
class _RecordSQL:
    """Prebuilt Core statements: building them per call cost more than running them."""

    find_key: Any
    retire: Any
    previous: Any
    mute: Any
    upsert: Any
    add_occurrence: Any


@functools.cache
def _record_sql(dialect: str) -> _RecordSQL:
    """The record path's statements with bound parameters, built once per dialect."""
    incidents, occurrences = cast(Table, Incident.__table__), cast(Table, Occurrence.__table__)
    i, o = incidents.c, occurrences.c
    upsert = _dialect_insert(dialect)(incidents)
    upsert = upsert.on_conflict_do_update(
        index_elements=[i.active_key],
        set_={
            "occurrence_count": i.occurrence_count + 1,
            "last_seen": case(
                (upsert.excluded.last_seen > i.last_seen, upsert.excluded.last_seen), else_=i.last_seen
            ),
            "first_seen": case(
                (upsert.excluded.first_seen < i.first_seen, upsert.excluded.first_seen), else_=i.first_seen
            ),
        },
    ).returning(i.id, i.occurrence_count, i.is_recurring, i.status)
    return _RecordSQL(
        find_key=select(o.id, i.id, i.is_recurring, i.occurrence_count, i.status)
        .join_from(occurrences, incidents, i.id == o.incident_id)
        .where(o.key == bindparam("key")),
        retire=incidents.update()
        .where(i.active_key == bindparam("fp"), i.last_seen < bindparam("stale_before"))
        .values(active_key=None),
        previous=select(func.max(i.id)).where(i.fingerprint == bindparam("fp")),
        mute=select(Mute.__table__.c.id)
        .where(*_mute_covers(bindparam("at"), bindparam("sig"), bindparam("engines", expanding=True)))
        .limit(1),
        upsert=upsert,
        add_occurrence=occurrences.insert().returning(o.id),
    )


def record(session: Session, a: dict[str, Any], dedup_window: timedelta) -> RecordResult:
    # Core statements built once (see _RECORD_SQL): this is the hot path of the bot.
    conn = session.connection()
    sql = _record_sql(conn.dialect.name)
    seen_at = _ts(a["seen_at"])
    done = conn.execute(sql.find_key, {"key": a["key"]}).first()
    if done is not None:
        occ_id, inc_id, recurring, count, status = done
        return RecordResult(
            inc_id, occ_id, False, recurring, count, status, status == "muted", duplicate=True
        )

    fp = a["fingerprint"]
    conn.execute(sql.retire, {"fp": fp, "stale_before": seen_at - dedup_window})
    previous = conn.execute(sql.previous, {"fp": fp}).scalar()
    engines = [a["engine"], a["target"]]
    muted = conn.execute(sql.mute, {"at": seen_at, "sig": a["signature_id"], "engines": engines}).first()
    inc_id, count, recurring, status = conn.execute(
        sql.upsert,
        {
            "fingerprint": fp,
            "active_key": fp,
            "signature_id": a["signature_id"],
            "engine": a["engine"],
            "target": a["target"],
            "status": "muted" if muted else "open",
            "severity": a["severity"],
            "source": a["source"],
            "first_seen": seen_at,
            "last_seen": seen_at,
            "occurrence_count": 1,
            "is_recurring": previous is not None,
            "previous_incident_id": previous,
        },
    ).one()
    occ_id = conn.execute(
        sql.add_occurrence,
        {
            "incident_id": inc_id,
            "key": a["key"],
            "seen_at": seen_at,
            "source": a["source"],
            "channel": a["channel"],
            "thread_ts": a["thread_ts"],
            "user_id": a["user"],
            "excerpt": a["excerpt"],
            "excerpt_truncated": a["excerpt_truncated"],
            "excerpt_bytes": a["excerpt_bytes"],
            "confidence": a["confidence"],
            "values": a["values"],
        },
    ).scalar_one()
    return RecordResult(
        inc_id, occ_id, count == 1, recurring, count, status, bool(muted) or status == "muted"
    )


def check(session: Session, a: dict[str, Any]) -> int:
    return session.execute(
        insert(EngineCheck)
        .values(
            engine=a["engine"],
            checked_at=_ts(a["at"]),
            state=a["state"],
            latency_ms=a["latency_ms"],
            details=a["details"],
        )
        .returning(EngineCheck.id)
    ).scalar_one()


def feedback(session: Session, a: dict[str, Any]) -> int:
    at = _ts(a["at"])
    _require_incident(session, a["incident_id"])
    feedback_id = _upsert_returning_id(
        session,
        Feedback,
        {
            "incident_id": a["incident_id"],
            "user_id": a["user"],
            "kind": a["kind"],
            "correct_signature_id": a["correct_signature_id"],
            "created_at": at,
            "updated_at": at,
        },
        key=[Feedback.incident_id, Feedback.user_id],
        replace=["kind", "correct_signature_id"],
    )
    acknowledge(session, {"incident_id": a["incident_id"], "by": a["user"], "at": a["at"]})
    if a["kind"] == "resolved":
        resolve(session, {"incident_id": a["incident_id"], "by": a["user"], "note": None, "at": a["at"]})
    return feedback_id


def resolve(session: Session, a: dict[str, Any]) -> bool:
    changed = rowcount(
        session.execute(
            update(Incident)
            .where(Incident.id == a["incident_id"], Incident.status != "resolved")
            .values(
                status="resolved",
                resolved_at=_ts(a["at"]),
                resolved_by=a["by"],
                resolution=a["note"],
                active_key=None,
            )
            .execution_options(synchronize_session=False)
        )
    )
    if not changed:
        _require_incident(session, a["incident_id"])
    return bool(changed)


def acknowledge(session: Session, a: dict[str, Any]) -> bool:
    changed = rowcount(
        session.execute(
            update(Incident)
            .where(Incident.id == a["incident_id"], Incident.acknowledged_at.is_(None))
            .values(
                acknowledged_at=_ts(a["at"]),
                acknowledged_by=a["by"],
                status=case((Incident.status == "open", "acknowledged"), else_=Incident.status),
            )
            .execution_options(synchronize_session=False)
        )
    )
    if not changed:
        _require_incident(session, a["incident_id"])
    return bool(changed)


def mute(session: Session, a: dict[str, Any]) -> int:
    return session.execute(
        insert(Mute)
        .values(
            signature_id=a["signature_id"],
            engine=a["engine"],
            until=_ts(a["until"]),
            created_by=a["by"],
            reason=a["reason"],
            created_at=_ts(a["at"]),
        )
        .returning(Mute.id)
    ).scalar_one()


def unmute(session: Session, a: dict[str, Any]) -> bool:
    at = _ts(a["at"])
    return bool(
        rowcount(
            session.execute(
                update(Mute)
                .where(Mute.id == a["mute_id"], Mute.until > at)
                .values(until=at)
                .execution_options(synchronize_session=False)
            )
        )
    )


def posted(session: Session, a: dict[str, Any]) -> int:
    at = _ts(a["at"])
    return _upsert_returning_id(
        session,
        PostedMessage,
        {
            "channel": a["channel"],
            "ts": a["ts"],
            "kind": a["kind"],
            "incident_id": a["incident_id"],
            "engine": a["engine"],
            "created_at": at,
            "updated_at": at,
        },
        key=[PostedMessage.channel, PostedMessage.ts],
        replace=["kind", "incident_id", "engine"],
    )


def _require_incident(session: Session, incident_id: int) -> None:
    if session.get(Incident, incident_id) is None:
        raise IncidentNotFound(f"no incident {incident_id}")


def table(dedup_window: timedelta) -> dict[str, Callable[[Session, dict[str, Any]], Any]]:
    """Each operation by the name the spool keeps; recording joins repeats within `dedup_window`."""
    return {
        "record": functools.partial(record, dedup_window=dedup_window),
        "check": check,
        "feedback": feedback,
        "resolve": resolve,
        "acknowledge": acknowledge,
        "mute": mute,
        "unmute": unmute,
        "posted": posted,
    }
