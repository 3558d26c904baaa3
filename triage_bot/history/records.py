"""What a write takes and gives back: a sighting of a failure, and what recording it did."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Sighting:
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
