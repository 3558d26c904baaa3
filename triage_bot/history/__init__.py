"""Incident history: every answer and failed health check, deduplicated, redacted, kept for the digest.

The rest of the bot uses one object and plain dataclasses (no Slack types, no ORM objects):

    store = HistoryStore.from_settings()          # DATABASE_URL, dedup window, spool from Settings
    # or: HistoryStore(session_factory, dedup_window=timedelta(hours=6), spool=Spool(path))

Writes (validated and redacted first; if the database is away they wait in the spool and return
the "spooled" value shown; `SpoolFullError` if the spool is at its bound):
    store.record(Sighting(signature_id, engine, target=None, severity="medium", source="slack",
                 channel=None, thread_ts=None, user=None, excerpt="", confidence=None, values=None,
                 seen_at=None)) -> RecordResult(incident_id, occurrence_id, is_new, is_recurring,
                 occurrence_count, status, muted, spooled, duplicate)
    store.record_check(engine, state, latency_ms=None, details=None, checked_at=None) -> int | None
    store.record_feedback(incident_id, user, kind, correct_signature_id=None, at=None) -> int | None
        kind: helpful | wrong_match | resolved; a user's new vote replaces the old one
    store.resolve(incident_id, by, note=None, at=None) -> bool | None   (IncidentNotFound)
    store.resolve_active(signature_id, engine, target, by, note=None) -> int | None
    store.acknowledge(incident_id, by, at=None) -> bool | None
    store.mute(signature_id=None, engine=None, *, until=None | duration=None, by, reason=None) -> int | None
    store.unmute(mute_id) -> bool | None
    store.record_posted(channel, ts, kind, incident_id=None, engine=None) -> int | None
    store.mark_event_once(event_id) -> bool      (True = handle it; True also when the DB is away)
    store.flush_spool() -> DrainResult | None

Reads (raise StorageUnavailable while the database is away):
    store.history(engine=, signature_id=, target=, status=, days=, limit=100) -> list[IncidentSummary]
    store.get_incident(incident_id) -> IncidentSummary | None
    store.seen_before(signature_id, engine, target=None, exclude_incident_id=None) -> SeenBefore | None
    store.is_muted(signature_id, engine, target=None) -> MuteInfo | None;  store.active_mutes()
    store.find_posted(incident_id=None, engine=None, kind=None) -> PostedRef | None
    store.digest_numbers(start, end, top=5) -> DigestNumbers;  store.uptime(start, end)
    store.prune(days=None, event_days=7) -> PruneResult   (None: TRIAGE_RETENTION_DAYS, default 90)

Limits: excerpts are capped at 16 KiB of UTF-8 (EXCERPT_CAP_BYTES) with a visible truncation marker;
the spool holds 10,000 records / 64 MiB by default and refuses new writes when full (see spool.py).
Bad arguments raise ValueError with a message that names the argument.
"""

from triage_bot.history.errors import IncidentNotFound, SpoolFullError, StorageError, StorageUnavailable
from triage_bot.history.figures import DigestNumbers, GroupCount, Uptime
from triage_bot.history.fingerprint import fingerprint
from triage_bot.history.queries import IncidentSummary, MuteInfo, PostedRef, SeenBefore
from triage_bot.history.recorder import Recorder
from triage_bot.history.records import RecordResult, Sighting
from triage_bot.history.retention import PruneResult
from triage_bot.history.sanitize import EXCERPT_CAP_BYTES
from triage_bot.history.spool import DrainResult, Spool
from triage_bot.history.store import HistoryStore, Recall, open_store
from triage_bot.redaction import redact

__all__ = [
    "EXCERPT_CAP_BYTES",
    "DigestNumbers",
    "DrainResult",
    "GroupCount",
    "HistoryStore",
    "IncidentNotFound",
    "IncidentSummary",
    "MuteInfo",
    "PostedRef",
    "PruneResult",
    "Recall",
    "RecordResult",
    "Recorder",
    "SeenBefore",
    "Sighting",
    "Spool",
    "SpoolFullError",
    "StorageError",
    "StorageUnavailable",
    "Uptime",
    "fingerprint",
    "open_store",
    "redact",
]
