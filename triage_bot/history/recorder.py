"""Every write to the history: observations (with dedup), checks, feedback, resolution, mutes.

Each public method validates and redacts its input first, then runs one short transaction. When
the database is unreachable the same (already redacted) arguments go to the spool and replay in
order later, so a write either lands, waits in the spool, or raises; it is never lost quietly.

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
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import Table, bindparam, case, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from triage_bot.history import sanitize as clean
from triage_bot.history.db import rowcount
from triage_bot.history.errors import IncidentNotFound, StorageUnavailable, is_unavailable
from triage_bot.history.fingerprint import fingerprint
from triage_bot.history.models import (
    FEEDBACK_KINDS,
    EngineCheck,
    Feedback,
    Incident,
    Mute,
    Occurrence,
    PostedMessage,
    SlackEvent,
)
from triage_bot.history.spool import DrainResult, Spool

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_MUTE = timedelta(days=366)


@dataclass(frozen=True, slots=True)
class Observation:
    """One sighting of a known failure, as the matcher or a health probe reports it."""

    signature_id: str
    engine: str | None
    target: str | None = None  # engine instance or channel; defaults to the channel
    severity: str = "medium"
    source: str = "slack"  # slack | health | cli
    channel: str | None = None
    thread_ts: str | None = None
    user: str | None = None
    excerpt: str | bytes | None = ""
    confidence: float | None = None
    values: dict[str, Any] | None = None
    seen_at: datetime | None = None  # default now
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # makes replays idempotent


@dataclass(frozen=True, slots=True)
class RecordResult:
    incident_id: int | None  # None only when spooled
    occurrence_id: int | None
    is_new: bool  # this observation opened the incident
    is_recurring: bool  # the incident follows an earlier one with the same fingerprint
    occurrence_count: int
    status: str | None = None
    muted: bool = False  # a mute matches: do not post
    spooled: bool = False  # the database was away; stored locally, replayed later
    duplicate: bool = False  # this observation key was recorded before (a replay)


SPOOLED_RECORD = RecordResult(None, None, False, False, 0, spooled=True)


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _dialect_insert(dialect: str) -> Any:
    """The dialect's INSERT, which has on_conflict_do_update / do_nothing (the upserts need it)."""
    if dialect == "postgresql":
        return postgresql.insert
    if dialect == "sqlite":
        return sqlite.insert
    raise ValueError(f"the incident history runs on SQLite or PostgreSQL, not {dialect}")


def _insert(session: Session) -> Any:
    return _dialect_insert(session.get_bind().dialect.name)


def _upsert_returning_id(
    session: Session, model: Any, values: dict[str, Any], key: list[Any], replace: list[str]
) -> int:
    """INSERT, or on a clash of `key` replace the `replace` columns (and updated_at); return the row id.

    One statement, so two writers racing on the same key end with one row.
    """
    stmt = _insert(session)(model).values(**values)
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


class Recorder:
    """The write side: one transaction per call, spooled when the database is away."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        dedup_window: timedelta = timedelta(hours=6),
        spool: Spool | None = None,
        retry_after: float = 5.0,
        clock: Callable[[], datetime] = clean.utcnow,
    ) -> None:
        if dedup_window <= timedelta(0):
            raise ValueError("dedup_window must be positive")
        self.session_factory = session_factory
        self.dedup_window = dedup_window
        self.spool = spool
        self.retry_after = retry_after
        self.clock = clock
        self._down_until = 0.0
        self._ops: dict[str, Callable[[Session, dict[str, Any]], Any]] = {
            "record": self._apply_record,
            "check": self._apply_check,
            "feedback": self._apply_feedback,
            "resolve": self._apply_resolve,
            "acknowledge": self._apply_acknowledge,
            "mute": self._apply_mute,
            "unmute": self._apply_unmute,
            "posted": self._apply_posted,
        }

    # -- public writes -------------------------------------------------------------------------

    def record(self, obs: Observation) -> RecordResult:
        """Record one observation: join the open incident for its fingerprint or open a new one."""
        return self._write("record", self._record_args(obs), SPOOLED_RECORD)

    def _record_args(self, obs: Observation) -> dict[str, Any]:
        """An observation cleaned, redacted and capped: what the record operation (and the spool) holds."""
        now = self.clock()
        sig = clean.signature_id(obs.signature_id)
        engine = clean.identifier(obs.engine, "engine", 64, default="unknown")
        channel = clean.identifier(obs.channel, "channel", 64)
        target = clean.identifier(obs.target, "target", 200, default=channel or "unknown")
        seen_at, original = clean.observed_at(obs.seen_at, "seen_at", now)
        values = clean.json_values(obs.values)
        if original is not None:
            values["_seen_at_original"] = original
        excerpt = clean.prepare_excerpt(obs.excerpt)
        args = {
            "key": clean.identifier(obs.key, "key", 64) or uuid.uuid4().hex,
            "fingerprint": fingerprint(sig, engine, target),
            "signature_id": sig,
            "engine": engine,
            "target": target,
            "severity": clean.severity(obs.severity),
            "source": clean.source(obs.source),
            "channel": channel,
            "thread_ts": clean.identifier(obs.thread_ts, "thread_ts", 32),
            "user": clean.identifier(obs.user, "user", 64),
            "excerpt": excerpt.text,
            "excerpt_truncated": excerpt.truncated,
            "excerpt_bytes": excerpt.original_bytes,
            "confidence": clean.confidence(obs.confidence),
            "values": values,
            "seen_at": seen_at.isoformat(),
        }
        return args

    def record_check(
        self,
        engine: str,
        state: str,
        latency_ms: float | None = None,
        details: dict[str, Any] | None = None,
        checked_at: datetime | None = None,
    ) -> int | None:
        """Store one health-check result; returns its id, or None when it was spooled."""
        at, original = clean.observed_at(checked_at, "checked_at", self.clock())
        info = clean.json_values(details)
        if original is not None:
            info["_checked_at_original"] = original
        latency = None if latency_ms is None else float(latency_ms)
        if latency is not None and not 0 <= latency < 1e9:  # NaN fails too
            log.warning("check latency %r for %s is not plausible; stored as unknown", latency_ms, engine)
            latency = None
        args = {
            "engine": clean.identifier(engine, "engine", 64),
            "state": clean.choice(state, "state", ("up", "degraded", "down", "unknown")),
            "latency_ms": latency,
            "details": info,
            "at": at.isoformat(),
        }
        if args["engine"] is None:
            raise ValueError("engine is required")
        return self._write("check", args, None)

    def record_feedback(
        self,
        incident_id: int,
        user: str,
        kind: str,
        correct_signature_id: str | None = None,
        at: datetime | None = None,
    ) -> int | None:
        """A Helpful / Wrong match / Resolved vote; a user's new vote replaces their earlier one.

        Any vote is a human response, so it acknowledges the incident (MTTA); "resolved" resolves it.
        """
        kind = clean.choice(kind, "kind", FEEDBACK_KINDS)
        correct = clean.signature_id(correct_signature_id) if correct_signature_id else None
        if kind == "wrong_match" and correct is None:
            log.info("wrong-match vote on incident %s without the correct id", incident_id)
        args = {
            "incident_id": clean.record_id(incident_id, "incident_id"),
            "user": clean.identifier(user, "user", 64) or "unknown",
            "kind": kind,
            "correct_signature_id": correct,
            "at": clean.observed_at(at, "at", self.clock())[0].isoformat(),
        }
        return self._write("feedback", args, None)

    def resolve(
        self, incident_id: int, by: str, note: str | None = None, at: datetime | None = None
    ) -> bool | None:
        """Resolve an incident; True if it changed, False if already resolved, None if spooled.

        Raises IncidentNotFound for an unknown id. The next repeat opens a new, recurring incident.
        """
        args = {
            "incident_id": clean.record_id(incident_id, "incident_id"),
            "by": clean.identifier(by, "by", 64) or "unknown",
            "note": clean.note(note),
            "at": clean.observed_at(at, "at", self.clock())[0].isoformat(),
        }
        return self._write("resolve", args, None)

    def resolve_active(
        self, signature_id: str, engine: str, target: str, by: str, note: str | None = None
    ) -> int | None:
        """Resolve the incident currently taking repeats for this fingerprint (health recovery)."""
        fp = fingerprint(clean.signature_id(signature_id), engine, target)
        incident_id = self._run(
            lambda s, _: s.scalar(select(Incident.id).where(Incident.active_key == fp)), {}
        )
        if incident_id is None:
            return None
        self.resolve(incident_id, by, note)
        return incident_id

    def acknowledge(self, incident_id: int, by: str, at: datetime | None = None) -> bool | None:
        """Mark the first human response (MTTA); True if this was it, None if spooled."""
        args = {
            "incident_id": clean.record_id(incident_id, "incident_id"),
            "by": clean.identifier(by, "by", 64) or "unknown",
            "at": clean.observed_at(at, "at", self.clock())[0].isoformat(),
        }
        return self._write("acknowledge", args, None)

    def mute(
        self,
        signature_id: str | None = None,
        engine: str | None = None,
        *,
        until: datetime | None = None,
        duration: timedelta | None = None,
        by: str,
        reason: str | None = None,
    ) -> int | None:
        """Silence a signature, an engine (kind or instance), or both, until a time (at most a year)."""
        now = self.clock()
        if (until is None) == (duration is None):
            raise ValueError("give exactly one of until or duration")
        end = now + duration if duration is not None else clean.as_utc(until, "until")  # type: ignore[arg-type]
        if not now < end <= now + MAX_MUTE:
            raise ValueError(f"a mute must end in the future and within {MAX_MUTE.days} days")
        sig = clean.signature_id(signature_id) if signature_id else None
        eng = clean.identifier(engine, "engine", 64)
        if sig is None and eng is None:
            raise ValueError("a mute needs a signature id, an engine, or both")
        args = {
            "signature_id": sig,
            "engine": eng,
            "until": end.isoformat(),
            "by": clean.identifier(by, "by", 64) or "unknown",
            "reason": clean.note(reason),
            "at": now.isoformat(),
        }
        return self._write("mute", args, None)

    def unmute(self, mute_id: int) -> bool | None:
        """End a mute now; True if it was active."""
        return self._write(
            "unmute", {"mute_id": clean.record_id(mute_id, "mute_id"), "at": self.clock().isoformat()}, None
        )

    def record_posted(
        self,
        channel: str,
        ts: str,
        kind: str,
        incident_id: int | None = None,
        engine: str | None = None,
    ) -> int | None:
        """Remember a message the bot posted, so it can be updated in place later."""
        args = {
            "channel": clean.identifier(channel, "channel", 64),
            "ts": clean.identifier(ts, "ts", 32),
            "kind": clean.identifier(kind, "kind", 32),
            "incident_id": None if incident_id is None else clean.record_id(incident_id, "incident_id"),
            "engine": clean.identifier(engine, "engine", 64),
            "at": self.clock().isoformat(),
        }
        if not (args["channel"] and args["ts"] and args["kind"]):
            raise ValueError("channel, ts and kind are required")
        return self._write("posted", args, None)

    def mark_event_once(self, event_id: str, at: datetime | None = None) -> bool:
        """True the first time an event id is seen (handle it), False for a retry or another replica.

        If the database is away this returns True and logs it: answering twice is better than not
        answering (Slack gives up after its retries). Old ids are pruned by `prune`.
        """
        event = clean.identifier(event_id, "event_id", 255)
        if not event:
            raise ValueError("event_id is required")
        stamp = clean.observed_at(at, "at", self.clock())[0]

        def apply(session: Session, _: dict[str, Any]) -> bool:
            stmt = (
                _insert(session)(SlackEvent)
                .values(event_id=event, received_at=stamp)
                .on_conflict_do_nothing(index_elements=[SlackEvent.event_id])
                .returning(SlackEvent.event_id)
            )
            return session.execute(stmt).first() is not None

        try:
            return self._run(apply, {})
        except StorageUnavailable as error:
            log.warning(
                "database unavailable (%s): handling event %s without the once-only check", error, event
            )
            return True

    def flush_spool(self) -> DrainResult | None:
        """Replay spooled writes in order (also done before each write); None without a spool."""
        if self.spool is None:
            return None
        result = self.spool.drain(lambda op, args: self._run(self._ops[op], args), is_unavailable)
        if result.stopped:
            self._down_until = time.monotonic() + self.retry_after
        return result

    # -- machinery -----------------------------------------------------------------------------

    def _maybe_flush(self) -> None:
        if self.spool is not None and not self.spool.is_empty() and time.monotonic() >= self._down_until:
            self.flush_spool()

    def _write(
        self,
        op: str,
        args: dict[str, Any],
        spooled: T,
        apply: Callable[[Session, dict[str, Any]], T] | None = None,
    ) -> T:
        """Run `op` in one transaction, or spool it when the database is away. `apply` does the op
        and more in the same transaction; a spooled write replays as the plain op."""
        if self.spool is not None:
            self._maybe_flush()
            if not self.spool.is_empty() or time.monotonic() < self._down_until:
                self.spool.append(op, args)  # keep order behind what is already waiting
                return spooled
        try:
            done: T = self._run(
                apply or self._ops[op], args
            )  # each op returns what its public method promises
            return done
        except StorageUnavailable:
            if self.spool is None:
                raise
            self._down_until = time.monotonic() + self.retry_after
            self.spool.append(op, args)
            return spooled

    def _run(self, apply: Callable[[Session, dict[str, Any]], T], args: dict[str, Any]) -> T:
        """One transaction, retried once for a transient error (deadlock, dropped connection)."""
        for attempt in (1, 2):
            try:
                with self.session_factory() as session, session.begin():
                    return apply(session, args)
            except Exception as error:
                if not is_unavailable(error):
                    raise
                if attempt == 2:
                    raise StorageUnavailable(f"database unavailable: {_first_line(error)}") from error
                time.sleep(0.05)
        raise AssertionError("unreachable")

    # -- the operations, as replayed from the spool --------------------------------------------

    def _apply_record(self, session: Session, a: dict[str, Any]) -> RecordResult:
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
        conn.execute(sql.retire, {"fp": fp, "stale_before": seen_at - self.dedup_window})
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

    def _apply_check(self, session: Session, a: dict[str, Any]) -> int:
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

    def _apply_feedback(self, session: Session, a: dict[str, Any]) -> int:
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
        self._apply_acknowledge(session, {"incident_id": a["incident_id"], "by": a["user"], "at": a["at"]})
        if a["kind"] == "resolved":
            self._apply_resolve(
                session, {"incident_id": a["incident_id"], "by": a["user"], "note": None, "at": a["at"]}
            )
        return feedback_id

    def _apply_resolve(self, session: Session, a: dict[str, Any]) -> bool:
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

    def _apply_acknowledge(self, session: Session, a: dict[str, Any]) -> bool:
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

    def _apply_mute(self, session: Session, a: dict[str, Any]) -> int:
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

    def _apply_unmute(self, session: Session, a: dict[str, Any]) -> bool:
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

    def _apply_posted(self, session: Session, a: dict[str, Any]) -> int:
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


def _first_line(error: BaseException) -> str:
    return (str(getattr(error, "orig", None) or error).strip().splitlines() or [type(error).__name__])[0][
        :200
    ]
