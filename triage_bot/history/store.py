"""`HistoryStore`: the recorder's writes plus the read queries and retention, behind one object.

Reads replay the spool first when it holds anything, so a query right after an outage sees the
records that waited; while the database is away they raise `StorageUnavailable`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from triage_bot.history import figures, operations, queries, retention
from triage_bot.history import sanitize as clean
from triage_bot.history.db import READ_ONLY, make_engine, make_session_factory
from triage_bot.history.figures import DigestNumbers, FeedbackRecord, Uptime, WrongMatch
from triage_bot.history.queries import IncidentSummary, MuteInfo, PostedRef, SeenBefore
from triage_bot.history.recorder import Recorder
from triage_bot.history.records import SPOOLED_RECORD, RecordResult, Sighting
from triage_bot.history.retention import PruneResult
from triage_bot.history.spool import Spool
from triage_bot.settings import Settings

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Recall:
    """A recorded observation and what the answer says about it, read in the transaction that
    recorded it: the incident (when it was seen again), the earlier incidents of the same failure
    on the same target, and the mute that silenced it."""

    result: RecordResult
    incident: IncidentSummary | None = None
    previous: SeenBefore | None = None
    mute: MuteInfo | None = None


SPOOLED_RECALL = Recall(SPOOLED_RECORD)


class HistoryStore(Recorder):
    """What the bot holds: writes (Recorder), reads and retention over one session factory."""

    retention_days: float = 90

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **kwargs: Any) -> HistoryStore:
        """A store on `DATABASE_URL` with the configured window and spool (the schema must exist)."""
        settings = settings or Settings.from_env()
        kwargs.setdefault("dedup_window", settings.dedup_window)
        kwargs.setdefault(
            "spool", Spool(settings.spool_path, settings.spool_max_records, settings.spool_max_bytes)
        )
        store = cls(make_session_factory(make_engine(settings.database_url)), **kwargs)
        store.retention_days = settings.retention_days
        return store

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> HistoryStore:
        return cls(make_session_factory(make_engine(url)), **kwargs)

    def record_and_recall(self, obs: Sighting) -> Recall:
        """Record an observation and read back what its answer says about it, in one transaction
        (a Slack answer made four before: the record, the mute, the incident, the earlier ones)."""
        now = self.clock()

        def apply(session: Session, args: dict[str, Any]) -> Recall:
            result = operations.record(session, args, self.dedup_window)
            if result.incident_id is None:
                return Recall(result)
            sig, engine, channel = args["signature_id"], args["engine"], args["channel"]
            return Recall(
                result,
                incident=None if result.is_new else queries.get_incident(session, result.incident_id),
                # where it was pasted (None: anywhere), as the line under an answer says it
                previous=queries.seen_before(
                    session, sig, engine, channel, exclude_incident_id=result.incident_id
                ),
                mute=queries.is_muted(session, sig, engine, channel, now) if result.muted else None,
            )

        return self._write("record", self._record_args(obs), SPOOLED_RECALL, apply=apply)

    # -- reads ---------------------------------------------------------------------------------

    def history(
        self,
        *,
        engine: str | None = None,
        signature_id: str | None = None,
        target: str | None = None,
        status: str | None = None,
        days: float | None = None,
        limit: int = 100,
    ) -> list[IncidentSummary]:
        """Incidents seen in the last `days`, newest first; filters are exact matches."""
        now = self.clock()
        return self._read(
            lambda s: queries.history(
                s,
                engine=engine,
                signature_id=signature_id,
                target=target,
                status=status,
                days=days,
                limit=limit,
                now=now,
            )
        )

    def get_incident(self, incident_id: int) -> IncidentSummary | None:
        return self._read(lambda s: queries.get_incident(s, clean.record_id(incident_id, "incident_id")))

    def seen_before(
        self,
        signature_id: str,
        engine: str,
        target: str | None = None,
        *,
        exclude_incident_id: int | None = None,
    ) -> SeenBefore | None:
        exclude = None if exclude_incident_id is None else clean.record_id(exclude_incident_id, "incident_id")
        return self._read(
            lambda s: queries.seen_before(s, signature_id, engine, target, exclude_incident_id=exclude)
        )

    def is_muted(self, signature_id: str, engine: str, target: str | None = None) -> MuteInfo | None:
        now = self.clock()
        return self._read(lambda s: queries.is_muted(s, signature_id, engine, target, now))

    def active_mutes(self) -> list[MuteInfo]:
        now = self.clock()
        return self._read(lambda s: queries.active_mutes(s, now))

    def find_posted(
        self, *, incident_id: int | None = None, engine: str | None = None, kind: str | None = None
    ) -> PostedRef | None:
        if incident_id is not None:
            incident_id = clean.record_id(incident_id, "incident_id")
        return self._read(lambda s: queries.find_posted(s, incident_id=incident_id, engine=engine, kind=kind))

    def digest_numbers(self, start: datetime, end: datetime, top: int = 5) -> DigestNumbers:
        return self._read(lambda s: figures.digest_numbers(s, start, end, top))

    def uptime(self, start: datetime, end: datetime) -> list[Uptime]:
        return self._read(lambda s: figures.uptime(s, start, end))

    def wrong_matches(self, start: datetime, end: datetime) -> list[WrongMatch]:
        return self._read(lambda s: figures.wrong_matches(s, start, end))

    def feedback_records(
        self, since: datetime, kinds: tuple[str, ...] = ("wrong_match",)
    ) -> list[FeedbackRecord]:
        return self._read(lambda s: figures.feedback_records(s, since, kinds))

    # -- retention -----------------------------------------------------------------------------

    def prune(self, days: float | None = None, *, event_days: float = 7) -> PruneResult:
        """Delete occurrences, checks and expired mutes older than `days` (default: the configured
        retention, TRIAGE_RETENTION_DAYS); incident rows stay, with their counts and times."""
        return retention.prune(
            lambda fn: self._run(lambda session, _: fn(session), {}),
            self.retention_days if days is None else days,
            event_days=event_days,
            now=self.clock(),
        )

    # -- machinery -----------------------------------------------------------------------------

    def _read(self, fn: Callable[[Session], T]) -> T:
        self._maybe_flush()

        def apply(session: Session, _: dict[str, Any]) -> T:
            session.connection(execution_options={READ_ONLY: True})
            return fn(session)

        return self._run(apply, {})


def open_store(url: str | None = None, **kwargs: Any) -> HistoryStore:
    """The store the bot uses: settings from the environment, optionally another URL."""
    settings = Settings.from_env()
    if url is not None:
        settings = settings.model_copy(update={"database_url": url})  # pydantic, not a dataclass
    return HistoryStore.from_settings(settings, **kwargs)
