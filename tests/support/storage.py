"""The history database in tests: the PostgreSQL test server (URL, schemas) and a database that goes away."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from urllib.parse import quote

from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

PG_URL = os.environ.get("TRIAGE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def with_schema(url: str, schema: str) -> str:
    """The URL with search_path set to `schema`, so models, Alembic and subprocesses all use it."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"


def pg_problem() -> str | None:
    engine = create_engine(PG_URL, connect_args={"connect_timeout": 2})
    try:
        with engine.connect() as connection:
            connection.execute(text("select 1"))
        return None
    except Exception as error:
        return str(getattr(error, "orig", error)).strip().splitlines()[0]
    finally:
        engine.dispose()


class Switch:
    """A session factory that can be made to fail like a database that went away."""

    def __init__(self, factory: Callable[[], object]) -> None:
        self.factory = factory
        self.down = False

    def __call__(self) -> object:
        if self.down:
            raise OperationalError("connect", None, sqlite3.OperationalError("unable to open database file"))
        return self.factory()
