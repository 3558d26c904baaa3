"""Engine and session factory from a database URL, tuned per backend.

SQLite: WAL (readers never block the writer), a 30 s busy timeout, foreign keys on, and every
write transaction begun with BEGIN IMMEDIATE so it takes the write lock up front (a deferred
transaction that reads then writes can fail with "database is locked" without waiting); reads
opened with the READ_ONLY execution option use a plain BEGIN and never block the writer.
PostgreSQL: psycopg 3, pre-ping (a restarted server leaves dead pooled connections), a short
connect timeout so an unreachable server sends records to the spool quickly, and a client-side
statement deadline with a fail-fast window after a hang (db_guard.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, MetaData, Result, create_engine, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from triage_bot.history.db_guard import STATEMENT_DEADLINE_S, guard
from triage_bot.private_files import touch_private
from triage_bot.settings import Settings

READ_ONLY = "triage_read_only"
"""Execution option: this transaction only reads (SQLite then skips the write lock)."""


def normalize_url(url: str) -> str:
    """Accept the URLs people paste (postgres://, postgresql://) and use the psycopg 3 driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str | None = None, **kwargs: Any) -> Engine:
    url = normalize_url(url or Settings.from_env().database_url)
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        database = make_url(url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            parent = Path(database).parent
            if not parent.is_dir() and parent == Settings.from_env().data_dir:
                parent.mkdir(parents=True, mode=0o700)  # the data directory: a first run creates it
            if parent.is_dir():  # a configured path in a missing directory fails loudly, in SQLite
                touch_private(database)  # SQLite gives its -wal and -shm files the database file's mode
        connect_args = {"timeout": 30.0, "check_same_thread": False, **kwargs.pop("connect_args", {})}
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        _tune_sqlite(engine)
        return engine
    if backend == "postgresql":
        # a hung server is bounded everywhere: connecting (libpq), waiting for a pooled connection,
        # each statement (a client-side watchdog, db_guard), and dead peers (TCP keepalives)
        connect_args = {
            "connect_timeout": 5,
            "keepalives": 1,
            "keepalives_idle": 10,
            "keepalives_interval": 5,
            "keepalives_count": 3,
            "tcp_user_timeout": 15000,
            **kwargs.pop("connect_args", {}),
        }
        kwargs.setdefault("pool_pre_ping", False)  # db_guard pings on checkout, with a deadline
        kwargs.setdefault("pool_timeout", 5)
        kwargs.setdefault("pool_recycle", 1800)
        deadline = kwargs.pop("statement_deadline_s", STATEMENT_DEADLINE_S)
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        guard(engine, deadline_s=deadline)
        return engine
    return create_engine(url, **kwargs)


def _tune_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        if engine.url.database not in (None, "", ":memory:"):
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        read_only = connection.get_execution_options().get(READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def session_factory_from_url(url: str | None = None, **kwargs: Any) -> sessionmaker[Session]:
    return make_session_factory(make_engine(url, **kwargs))


def rowcount(result: Result[Any]) -> int:
    """The rows an UPDATE or DELETE touched.

    Session.execute types every result as the ORM's Result; a DML statement's is a CursorResult,
    which is what carries the count.
    """
    return cast("CursorResult[Any]", result).rowcount


def missing_tables(engine: Engine, metadata: MetaData) -> list[str]:
    """The tables of `metadata` the database does not have: Alembic owns the schema, so a process
    that finds one missing says to run `triage-bot db upgrade` rather than create it itself."""
    present = set(inspect(engine).get_table_names())
    return sorted(name for name in metadata.tables if name not in present)
