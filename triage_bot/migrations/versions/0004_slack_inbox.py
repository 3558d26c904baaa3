"""Slack inbox: every request that carries work, written down before its ack (triage_bot/slack/inbox.py).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

The app creates this table at start-up when it is missing (tests, a first run), so it is created
here only when missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if "slack_inbox" in set(sa.inspect(op.get_bind()).get_table_names()):
        return
    op.create_table(
        "slack_inbox",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("accepted_by", sa.String(128), nullable=False),
        sa.Column("owner", sa.String(128), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_slack_inbox_created_at", "slack_inbox", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_slack_inbox_created_at", table_name="slack_inbox")
    op.drop_table("slack_inbox")
