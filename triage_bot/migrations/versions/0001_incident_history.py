"""Incident history: incidents, occurrences, feedback, slack_events, posted_messages, engine_checks, mutes.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Written out by hand from autogenerate's output so that it does not import the application's
models (a migration must keep meaning the same thing when the models change later).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _id() -> sa.types.TypeEngine[int]:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _when() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "incidents",
        sa.Column("id", _id(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("active_key", sa.String(length=64), nullable=True),
        sa.Column("signature_id", sa.String(length=128), nullable=False),
        sa.Column("engine", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("first_seen", _when(), nullable=False),
        sa.Column("last_seen", _when(), nullable=False),
        sa.Column("occurrence_count", sa.Integer(), nullable=False),
        sa.Column("is_recurring", sa.Boolean(), nullable=False),
        sa.Column("previous_incident_id", _id(), nullable=True),
        sa.Column("acknowledged_at", _when(), nullable=True),
        sa.Column("acknowledged_by", sa.String(length=64), nullable=True),
        sa.Column("resolved_at", _when(), nullable=True),
        sa.Column("resolved_by", sa.String(length=64), nullable=True),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.CheckConstraint("source IN ('slack', 'health', 'cli')", name=op.f("ck_incidents_source")),
        sa.CheckConstraint(
            "status IN ('open', 'acknowledged', 'resolved', 'muted')", name=op.f("ck_incidents_status")
        ),
        sa.CheckConstraint("occurrence_count >= 1", name=op.f("ck_incidents_occurrence_count")),
        sa.ForeignKeyConstraint(
            ["previous_incident_id"],
            ["incidents.id"],
            name=op.f("fk_incidents_previous_incident_id_incidents"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incidents")),
        sa.UniqueConstraint("active_key", name=op.f("uq_incidents_active_key")),
    )
    op.create_index(op.f("ix_incidents_engine_last_seen"), "incidents", ["engine", "last_seen"])
    op.create_index(op.f("ix_incidents_fingerprint_id"), "incidents", ["fingerprint", "id"])
    op.create_index(op.f("ix_incidents_first_seen"), "incidents", ["first_seen"])
    op.create_index(op.f("ix_incidents_last_seen"), "incidents", ["last_seen"])
    op.create_index(op.f("ix_incidents_resolved_at"), "incidents", ["resolved_at"])
    op.create_index(op.f("ix_incidents_signature_id_last_seen"), "incidents", ["signature_id", "last_seen"])

    op.create_table(
        "occurrences",
        sa.Column("id", _id(), nullable=False),
        sa.Column("incident_id", _id(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("seen_at", _when(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=True),
        sa.Column("thread_ts", sa.String(length=32), nullable=True),
        sa.Column("user_id", sa.String(length=64), nullable=True),
        sa.Column("excerpt", sa.Text(), nullable=False),
        sa.Column("excerpt_truncated", sa.Boolean(), nullable=False),
        sa.Column("excerpt_bytes", sa.Integer(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("values", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["incident_id"],
            ["incidents.id"],
            name=op.f("fk_occurrences_incident_id_incidents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_occurrences")),
        sa.UniqueConstraint("key", name=op.f("uq_occurrences_key")),
    )
    op.create_index(op.f("ix_occurrences_incident_id_seen_at"), "occurrences", ["incident_id", "seen_at"])
    op.create_index(op.f("ix_occurrences_seen_at_incident_id"), "occurrences", ["seen_at", "incident_id"])

    op.create_table(
        "feedback",
        sa.Column("id", _id(), nullable=False),
        sa.Column("incident_id", _id(), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("correct_signature_id", sa.String(length=128), nullable=True),
        sa.Column("created_at", _when(), nullable=False),
        sa.Column("updated_at", _when(), nullable=False),
        sa.CheckConstraint("kind IN ('helpful', 'wrong_match', 'resolved')", name=op.f("ck_feedback_kind")),
        sa.ForeignKeyConstraint(
            ["incident_id"],
            ["incidents.id"],
            name=op.f("fk_feedback_incident_id_incidents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_feedback")),
        sa.UniqueConstraint("incident_id", "user_id", name=op.f("uq_feedback_incident_id_user_id")),
    )

    op.create_table(
        "slack_events",
        sa.Column("event_id", sa.String(length=255), nullable=False),
        sa.Column("received_at", _when(), nullable=False),
        sa.PrimaryKeyConstraint("event_id", name=op.f("pk_slack_events")),
    )
    op.create_index(op.f("ix_slack_events_received_at"), "slack_events", ["received_at"])

    op.create_table(
        "posted_messages",
        sa.Column("id", _id(), nullable=False),
        sa.Column("channel", sa.String(length=64), nullable=False),
        sa.Column("ts", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("incident_id", _id(), nullable=True),
        sa.Column("engine", sa.String(length=64), nullable=True),
        sa.Column("created_at", _when(), nullable=False),
        sa.Column("updated_at", _when(), nullable=False),
        sa.ForeignKeyConstraint(
            ["incident_id"],
            ["incidents.id"],
            name=op.f("fk_posted_messages_incident_id_incidents"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_posted_messages")),
        sa.UniqueConstraint("channel", "ts", name=op.f("uq_posted_messages_channel_ts")),
    )
    op.create_index(op.f("ix_posted_messages_engine_kind"), "posted_messages", ["engine", "kind"])
    op.create_index(op.f("ix_posted_messages_incident_id"), "posted_messages", ["incident_id"])

    op.create_table(
        "engine_checks",
        sa.Column("id", _id(), nullable=False),
        sa.Column("engine", sa.String(length=64), nullable=False),
        sa.Column("checked_at", _when(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.CheckConstraint(
            "state IN ('up', 'degraded', 'down', 'unknown')", name=op.f("ck_engine_checks_state")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_engine_checks")),
    )
    op.create_index(
        op.f("ix_engine_checks_checked_at_engine_state"), "engine_checks", ["checked_at", "engine", "state"]
    )
    op.create_index(op.f("ix_engine_checks_engine_checked_at"), "engine_checks", ["engine", "checked_at"])

    op.create_table(
        "mutes",
        sa.Column("id", _id(), nullable=False),
        sa.Column("signature_id", sa.String(length=128), nullable=True),
        sa.Column("engine", sa.String(length=64), nullable=True),
        sa.Column("until", _when(), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", _when(), nullable=False),
        sa.CheckConstraint("signature_id IS NOT NULL OR engine IS NOT NULL", name=op.f("ck_mutes_scope")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mutes")),
    )
    op.create_index(op.f("ix_mutes_until"), "mutes", ["until"])


def downgrade() -> None:
    # Dependants first; dropping a table drops its indexes.
    for table in ("mutes", "engine_checks", "posted_messages", "slack_events", "feedback", "occurrences"):
        op.drop_table(table)
    op.drop_table("incidents")
