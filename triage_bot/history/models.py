"""The incident history tables (SQLAlchemy 2.0 typed models), the same on SQLite and PostgreSQL.

Choices that matter for correctness:
- `incidents.active_key` holds the fingerprint while an incident takes repeats and is NULL once it
  is resolved or its dedup window has passed. Its unique constraint is what makes two writers
  recording the same failure at the same moment end up with one incident (INSERT .. ON CONFLICT).
- `occurrences.key` is the id of the observation, unique, so replaying the spool after a crash
  cannot count an observation twice.
- Timestamps are stored in UTC and always come back timezone-aware, on SQLite too.
- Statuses and kinds are strings with CHECK constraints rather than native enums, so adding a value
  is a one-line migration on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator[datetime]):
    """TIMESTAMPTZ on PostgreSQL; naive UTC text on SQLite (which sorts correctly); aware on read."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# 64-bit ids on PostgreSQL (occurrences and checks grow without bound); SQLite only
# auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")

INCIDENT_STATUSES = ("open", "acknowledged", "resolved", "muted")
FEEDBACK_KINDS = ("helpful", "wrong_match", "resolved")
CHECK_STATES = ("up", "degraded", "down", "unknown")
SOURCES = ("slack", "health", "cli")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), dict[str, Any]: JSON()}


class Incident(Base):
    __tablename__ = "incidents"
    __table_args__ = (
        CheckConstraint(_in("status", INCIDENT_STATUSES), name="status"),
        CheckConstraint(_in("source", SOURCES), name="source"),
        CheckConstraint("occurrence_count >= 1", name="occurrence_count"),
        Index(None, "engine", "last_seen"),
        Index(None, "signature_id", "last_seen"),
        Index(None, "fingerprint", "id"),
        Index(None, "first_seen"),
        Index(None, "last_seen"),
        Index(None, "resolved_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    active_key: Mapped[str | None] = mapped_column(String(64), unique=True)
    signature_id: Mapped[str] = mapped_column(String(128))
    engine: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))
    severity: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(String(16))
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]
    occurrence_count: Mapped[int] = mapped_column(Integer, default=1)
    is_recurring: Mapped[bool] = mapped_column(default=False)
    previous_incident_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("incidents.id", ondelete="SET NULL")
    )
    acknowledged_at: Mapped[datetime | None]
    acknowledged_by: Mapped[str | None] = mapped_column(String(64))
    resolved_at: Mapped[datetime | None]
    resolved_by: Mapped[str | None] = mapped_column(String(64))
    resolution: Mapped[str | None] = mapped_column(Text)


class Occurrence(Base):
    __tablename__ = "occurrences"
    __table_args__ = (
        Index(None, "incident_id", "seen_at"),
        Index(None, "seen_at", "incident_id"),  # covers the digest's per-period count (index-only scan)
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    incident_id: Mapped[int] = mapped_column(BigId, ForeignKey("incidents.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(64), unique=True)
    seen_at: Mapped[datetime]
    source: Mapped[str] = mapped_column(String(16))
    channel: Mapped[str | None] = mapped_column(String(64))
    thread_ts: Mapped[str | None] = mapped_column(String(32))
    user_id: Mapped[str | None] = mapped_column(String(64))
    excerpt: Mapped[str] = mapped_column(Text)
    excerpt_truncated: Mapped[bool] = mapped_column(default=False)
    excerpt_bytes: Mapped[int] = mapped_column(Integer)
    confidence: Mapped[float | None] = mapped_column(Float)
    values: Mapped[dict[str, Any]]


class Feedback(Base):
    __tablename__ = "feedback"
    __table_args__ = (
        UniqueConstraint("incident_id", "user_id"),  # a second vote replaces the first
        CheckConstraint(_in("kind", FEEDBACK_KINDS), name="kind"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    incident_id: Mapped[int] = mapped_column(BigId, ForeignKey("incidents.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    correct_signature_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class SlackEvent(Base):
    __tablename__ = "slack_events"
    __table_args__ = (Index(None, "received_at"),)

    event_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    received_at: Mapped[datetime]


class PostedMessage(Base):
    __tablename__ = "posted_messages"
    __table_args__ = (
        UniqueConstraint("channel", "ts"),
        Index(None, "incident_id"),
        Index(None, "engine", "kind"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    channel: Mapped[str] = mapped_column(String(64))
    ts: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(32))
    incident_id: Mapped[int | None] = mapped_column(BigId, ForeignKey("incidents.id", ondelete="SET NULL"))
    engine: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class EngineCheck(Base):
    __tablename__ = "engine_checks"
    __table_args__ = (
        CheckConstraint(_in("state", CHECK_STATES), name="state"),
        Index(None, "engine", "checked_at"),
        Index(None, "checked_at", "engine", "state"),  # covers the uptime count (index-only scan)
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    engine: Mapped[str] = mapped_column(String(64))
    checked_at: Mapped[datetime]
    state: Mapped[str] = mapped_column(String(16))
    latency_ms: Mapped[float | None] = mapped_column(Float)
    details: Mapped[dict[str, Any]]


class Mute(Base):
    __tablename__ = "mutes"
    __table_args__ = (
        CheckConstraint("signature_id IS NOT NULL OR engine IS NOT NULL", name="scope"),
        Index(None, "until"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    signature_id: Mapped[str | None] = mapped_column(String(128))
    engine: Mapped[str | None] = mapped_column(String(64))
    until: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
