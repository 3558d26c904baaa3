"""Every table the bot owns, created from the models in one call, as the migrations would make them
(tests/history/test_migrations.py holds the migrations to the same models): the Slack app checks
for its tables at start and no longer creates them itself."""

from __future__ import annotations

from sqlalchemy import Engine

from triage_bot.history.models import Base
from triage_bot.scheduler import claims_metadata
from triage_bot.slack.inbox import inbox_metadata
from triage_bot.slack.outbox import metadata as slack_metadata

EVERY_METADATA = (Base.metadata, slack_metadata, claims_metadata, inbox_metadata)


def create_every_table(engine: Engine) -> None:
    for metadata in EVERY_METADATA:
        metadata.create_all(engine)
