"""The Slack adapter's own two tables: the outbox and the shared answers.

- `slack_outbox`: a reply Slack did not take (rate limit past the retries, Slack down, the network
  away) waits here and is retried until it lands. Bolt answers Slack 200 even when a listener
  fails, so Slack never redelivers: without this table such a reply would be lost silently.
  Rows are claimed with a lease (`claimed_until`), so several replicas sweeping the same table
  do not send the same row twice while its sender is alive.
- `slack_shares`: an ephemeral answer waiting for its "Post to channel" button. Button values are
  capped at 2,000 characters and ephemeral messages are not sent back with the click, so the
  message itself is kept here under a random key for a day.

They live in the history's database (same URL) but in their own metadata: the history's schema is
owned by `triage_bot/history` and its Alembic migrations. Migration 0002 creates these two tables
(`triage-bot db upgrade`, which `serve` runs first); `check_schema()` says when they are missing.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session, sessionmaker

from triage_bot.history.db import missing_tables, rowcount
from triage_bot.redaction import redact_value

log = logging.getLogger(__name__)

metadata = MetaData()

outbox_table = Table(
    "slack_outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("method", String(64), nullable=False),  # Web API method, or "response_url"
    Column("payload", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("next_at", DateTime(timezone=True), nullable=False, index=True),
    Column("claimed_until", DateTime(timezone=True)),
    Column("attempts", Integer, nullable=False, default=0),
    Column("last_error", Text),
    Column("state", String(16), nullable=False, default="pending"),  # pending | sent | dead
)

shares_table = Table(
    "slack_shares",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("channel", String(64), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("incident_id", Integer),
    Column("message", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, index=True),
)

MAX_ATTEMPTS = 12
SHARE_TTL = timedelta(days=1)
LEASE = timedelta(seconds=60)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def backoff(attempts: int) -> timedelta:
    """15 s, 30 s, 1 min … capped at 30 min: about 3 hours of tries before a row is given up."""
    return timedelta(seconds=min(15 * 2 ** max(0, attempts - 1), 1800))


@dataclass(frozen=True)
class OutboxItem:
    id: int
    method: str
    payload: dict[str, Any]
    attempts: int


@dataclass(frozen=True)
class Share:
    key: str
    channel: str
    user_id: str
    kind: str
    incident_id: int | None
    text: str
    blocks: list[dict[str, Any]]


class SlackStore:
    """Outbox and shares on a SQLAlchemy session factory (the history's database)."""

    def __init__(self, session_factory: sessionmaker[Session]):
        self.session_factory = session_factory

    def check_schema(self) -> None:
        """Raise when the tables are missing: migration 0002 creates them (`triage-bot db upgrade`)."""
        missing = missing_tables(self.session_factory.kw["bind"], metadata)
        if missing:
            raise RuntimeError(f"tables {', '.join(missing)} are missing: run `triage-bot db upgrade`")

    # -- outbox ----------------------------------------------------------------------------

    def add(self, method: str, payload: dict[str, Any], error: str, delay: float = 0.0) -> int:
        now = utcnow()
        with self.session_factory.begin() as session:
            # a reply can quote a paste: what waits in a table is redacted like everything stored
            safe = {
                k: v if k == "url" else redact_value(v)
                for k, v in json.loads(json.dumps(payload, default=str)).items()
            }
            return int(
                session.execute(
                    insert(outbox_table)
                    .values(
                        method=method,
                        payload=safe,
                        created_at=now,
                        next_at=now + timedelta(seconds=max(delay, 1.0)),
                        attempts=1,
                        last_error=error[:2000],
                        state="pending",
                    )
                    .returning(outbox_table.c.id)
                ).scalar_one()
            )

    def claim_due(self, limit: int = 20, now: datetime | None = None) -> list[OutboxItem]:
        """Rows due for a retry, each claimed for LEASE so another replica skips it meanwhile."""
        now = now or utcnow()
        claimed: list[OutboxItem] = []
        with self.session_factory.begin() as session:
            rows = session.execute(
                select(
                    outbox_table.c.id, outbox_table.c.method, outbox_table.c.payload, outbox_table.c.attempts
                )
                .where(
                    outbox_table.c.state == "pending",
                    outbox_table.c.next_at <= now,
                    or_(outbox_table.c.claimed_until.is_(None), outbox_table.c.claimed_until < now),
                )
                .order_by(outbox_table.c.id)
                .limit(limit)
            ).all()
            for row in rows:
                won = rowcount(
                    session.execute(
                        update(outbox_table)
                        .where(
                            outbox_table.c.id == row.id,
                            or_(outbox_table.c.claimed_until.is_(None), outbox_table.c.claimed_until < now),
                        )
                        .values(claimed_until=now + LEASE)
                    )
                )
                if won:
                    claimed.append(OutboxItem(row.id, row.method, row.payload, row.attempts))
        return claimed

    def sent(self, item_id: int) -> None:
        with self.session_factory.begin() as session:
            session.execute(
                update(outbox_table)
                .where(outbox_table.c.id == item_id)
                .values(state="sent", claimed_until=None)
            )

    def retry_later(self, item: OutboxItem, error: str, delay: float | None = None) -> str:
        """Count a failed try; give the row up (state dead, logged at ERROR) after MAX_ATTEMPTS."""
        attempts = item.attempts + 1
        state = "dead" if attempts >= MAX_ATTEMPTS else "pending"
        wait = timedelta(seconds=delay) if delay else backoff(attempts)
        with self.session_factory.begin() as session:
            session.execute(
                update(outbox_table)
                .where(outbox_table.c.id == item.id)
                .values(
                    attempts=attempts,
                    last_error=error[:2000],
                    next_at=utcnow() + wait,
                    claimed_until=None,
                    state=state,
                )
            )
        return state

    def defer(self, item: OutboxItem, delay: float) -> None:
        """Send later without counting a try (the channel's pace, not a failure)."""
        with self.session_factory.begin() as session:
            session.execute(
                update(outbox_table)
                .where(outbox_table.c.id == item.id)
                .values(next_at=utcnow() + timedelta(seconds=max(delay, 0.1)), claimed_until=None)
            )

    def give_up(self, item: OutboxItem, error: str) -> None:
        with self.session_factory.begin() as session:
            session.execute(
                update(outbox_table)
                .where(outbox_table.c.id == item.id)
                .values(state="dead", last_error=error[:2000], claimed_until=None)
            )

    def pending(self) -> int:
        with self.session_factory() as session:
            query = select(func.count()).select_from(outbox_table).where(outbox_table.c.state == "pending")
            return int(session.execute(query).scalar_one())

    def rows(self) -> list[dict[str, Any]]:
        with self.session_factory() as session:
            return [
                dict(r._mapping) for r in session.execute(select(outbox_table).order_by(outbox_table.c.id))
            ]

    # -- shares ----------------------------------------------------------------------------

    def put_share(
        self,
        channel: str,
        user_id: str,
        kind: str,
        text: str,
        blocks: list[dict[str, Any]],
        incident_id: int | None = None,
    ) -> str:
        key = secrets.token_urlsafe(16)
        now = utcnow()
        with self.session_factory.begin() as session:
            session.execute(delete(shares_table).where(shares_table.c.created_at < now - SHARE_TTL))
            session.execute(
                insert(shares_table).values(
                    key=key,
                    channel=channel,
                    user_id=user_id,
                    kind=kind,
                    incident_id=incident_id,
                    message=redact_value({"text": text, "blocks": blocks}),
                    created_at=now,
                )
            )
        return key

    def get_share(self, key: str) -> Share | None:
        with self.session_factory() as session:
            row = session.execute(select(shares_table).where(shares_table.c.key == key)).first()
        if row is None or (_aware(row.created_at) or utcnow()) < utcnow() - SHARE_TTL:
            return None
        message = row.message or {}
        return Share(
            row.key,
            row.channel,
            row.user_id,
            row.kind,
            row.incident_id,
            message.get("text", ""),
            message.get("blocks", []),
        )
