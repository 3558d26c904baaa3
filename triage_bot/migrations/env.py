"""Alembic environment: the metadata of every table the bot owns, and the URL from DATABASE_URL.

A caller may pass an open connection in `config.attributes["connection"]` (tests, `db upgrade`
inside a transaction) or a URL in `config.attributes["url"]`; otherwise Settings decides.
SQLite runs in batch mode, because it cannot ALTER most things in place.
"""

from __future__ import annotations

import logging.config
from typing import Literal

from alembic import context
from sqlalchemy import Connection, text

from triage_bot.history.db import make_engine
from triage_bot.history.models import Base, UTCDateTime
from triage_bot.scheduler import claims_metadata
from triage_bot.settings import Settings
from triage_bot.slack.inbox import inbox_metadata
from triage_bot.slack.outbox import metadata as slack_metadata

config = context.config
if config.config_file_name is not None and not config.attributes.get("skip_logging"):
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)

# every table the bot owns: the history's models, the Slack outbox and shares, the scheduler's claims
target_metadata = [Base.metadata, slack_metadata, claims_metadata, inbox_metadata]


def _render_item(kind: str, obj: object, _context: object) -> str | Literal[False]:
    """Autogenerate writes the portable column type, so migrations never import the models."""
    if kind == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _include_object(obj: object, name: str | None, kind: str, reflected: bool, compare_to: object) -> bool:
    """Leave alone tables in the database that the bot does not define (a shared database may hold
    other applications' tables), so autogenerate never proposes dropping them."""
    return not (kind == "table" and reflected and compare_to is None)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=_render_item,
        include_object=_include_object,
    )


def run_migrations_offline() -> None:
    context.configure(
        url=config.attributes.get("url") or Settings.from_env().database_url,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def _one_at_a_time(connection: Connection) -> None:
    """Replicas that start together (a Deployment's pods, each running `db upgrade`) migrate one
    after the other: the others wait on this lock, then find the schema already at head."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('triage-bot migrations'))"))


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            _one_at_a_time(connection)
            context.run_migrations()
        return
    engine = make_engine(config.attributes.get("url") or Settings.from_env().database_url)
    try:
        with engine.connect() as connection:
            _configure(connection)
            with context.begin_transaction():
                _one_at_a_time(connection)
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
