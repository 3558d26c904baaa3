"""Every write to the history: observations (with dedup), checks, feedback, resolution, mutes.

Each public method validates and redacts its input first, then runs one short transaction. When
the database is unreachable the same (already redacted) arguments go to the spool and replay in
order later, so a write either lands, waits in the spool, or raises; it is never lost quietly.

How an observation joins an incident is in operations.py; the spool machinery in spooled_writes.py.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from triage_bot.history import operations
from triage_bot.history import sanitize as clean
from triage_bot.history.errors import StorageUnavailable
from triage_bot.history.fingerprint import fingerprint
from triage_bot.history.models import (
    FEEDBACK_KINDS,
    Incident,
    SlackEvent,
)
from triage_bot.history.records import SPOOLED_RECORD, RecordResult, Sighting
from triage_bot.history.spool import Spool
from triage_bot.history.spooled_writes import SpooledWrites

log = logging.getLogger(__name__)

MAX_MUTE = timedelta(days=366)


class Recorder(SpooledWrites):
    """The write side: each public write cleans and redacts its input, then runs one operation."""

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
        super().__init__(session_factory, spool, retry_after)
        self.dedup_window = dedup_window
        self.clock = clock
        self._ops = operations.table(dedup_window)

    # -- public writes -------------------------------------------------------------------------

    def record(self, obs: Sighting) -> RecordResult:
        """Record one observation: join the open incident for its fingerprint or open a new one."""
        return self._write("record", self._record_args(obs), SPOOLED_RECORD)

    def _record_args(self, obs: Sighting) -> dict[str, Any]:
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
                operations.insert_for(session)(SlackEvent)
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
