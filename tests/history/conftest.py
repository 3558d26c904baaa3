"""Fixtures that run every storage test on SQLite and on PostgreSQL.

PostgreSQL is the server at TRIAGE_TEST_PG_URL (default 127.0.0.1:5432, database `test`, user
postgres, trust auth; `.ci/run` starts it). Each test run works in a schema of its own, named
after the process and a random suffix and dropped at the end, so parallel runs and other users
of the database never collide. When the server is unreachable the PostgreSQL cases skip and say
why; the SQLite cases still run.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text

from tests.support.storage import PG_URL, Switch, pg_problem, with_schema
from triage_bot.history import HistoryStore, Spool
from triage_bot.history.db import make_engine, make_session_factory
from triage_bot.history.models import Base

TABLES = ", ".join(table.name for table in Base.metadata.sorted_tables)


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine]:
    problem = pg_problem()
    if problem:
        pytest.skip(
            f"PostgreSQL unreachable at {PG_URL} ({problem}); "
            "start it (.ci/run does) or set TRIAGE_TEST_PG_URL"
        )
    engine = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def new_pg_schema(pg_admin: Engine) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty schemas (as URLs); all are dropped at the end of the run."""
    created: list[str] = []

    def make() -> str:
        schema = f"triage_test_{os.getpid()}_{secrets.token_hex(4)}"
        with pg_admin.connect() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        created.append(schema)
        return with_schema(PG_URL, schema)

    yield make
    with pg_admin.connect() as connection:
        for schema in created:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))


@pytest.fixture(scope="session")
def pg_tables_url(new_pg_schema: Callable[[], str]) -> str:
    """One schema with the tables, shared by the run's tests (emptied before each)."""
    url = new_pg_schema()
    engine = make_engine(url)
    Base.metadata.create_all(engine)
    engine.dispose()
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database URL with the history tables, empty."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'history.sqlite3'}"
        engine = make_engine(url)
        Base.metadata.create_all(engine)
        engine.dispose()
        return url
    url = request.getfixturevalue("pg_tables_url")
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))
    engine.dispose()
    return url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def spool(tmp_path: Path) -> Spool:
    return Spool(tmp_path / "spool.jsonl", max_records=100, max_bytes=1 << 20)


@pytest.fixture
def store(engine: Engine, spool: Spool) -> HistoryStore:
    return HistoryStore(make_session_factory(engine), spool=spool, retry_after=0)


@pytest.fixture
def now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def switch(engine: Engine) -> Switch:
    return Switch(make_session_factory(engine))


@pytest.fixture
def flaky(switch: Switch, spool: Spool) -> HistoryStore:
    """A store whose database can be switched away (`switch.down = True`)."""
    return HistoryStore(switch, spool=spool, retry_after=0)  # type: ignore[arg-type]
