"""Scheduler claims: one row per (job, slot), so each scheduled run happens once across replicas.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29

The PostgreSQL coordinator created this table at start-up before this migration existed, so it is
created here only when missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if "triage_scheduler_runs" in set(sa.inspect(op.get_bind()).get_table_names()):
        return
    op.create_table(
        "triage_scheduler_runs",
        sa.Column("job", sa.String(64), primary_key=True),
        sa.Column("slot", sa.DateTime(timezone=True), primary_key=True),
        sa.Column("runner", sa.String(128), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )


def downgrade() -> None:
    op.drop_table("triage_scheduler_runs")
