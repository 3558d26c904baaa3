"""Slack adapter tables: the outbox of replies Slack has not taken yet, and answers waiting to be shared.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

Earlier builds created these two tables at start-up (triage_bot/slack/outbox.py `ensure_schema`); this
migration adopts them, so it creates each one only when it is missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _when() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "slack_outbox" not in existing:
        op.create_table(
            "slack_outbox",
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
            sa.Column("method", sa.String(64), nullable=False),
            sa.Column("payload", sa.JSON(), nullable=False),
            sa.Column("created_at", _when(), nullable=False),
            sa.Column("next_at", _when(), nullable=False),
            sa.Column("claimed_until", _when(), nullable=True),
            sa.Column("attempts", sa.Integer(), nullable=False),
            sa.Column("last_error", sa.Text(), nullable=True),
            sa.Column("state", sa.String(16), nullable=False),
        )
        op.create_index("ix_slack_outbox_next_at", "slack_outbox", ["next_at"])
    if "slack_shares" not in existing:
        op.create_table(
            "slack_shares",
            sa.Column("key", sa.String(64), primary_key=True),
            sa.Column("channel", sa.String(64), nullable=False),
            sa.Column("user_id", sa.String(64), nullable=False),
            sa.Column("kind", sa.String(32), nullable=False),
            sa.Column("incident_id", sa.Integer(), nullable=True),
            sa.Column("message", sa.JSON(), nullable=False),
            sa.Column("created_at", _when(), nullable=False),
        )
        op.create_index("ix_slack_shares_created_at", "slack_shares", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_slack_shares_created_at", table_name="slack_shares")
    op.drop_table("slack_shares")
    op.drop_index("ix_slack_outbox_next_at", table_name="slack_outbox")
    op.drop_table("slack_outbox")
