"""`pg_schema`: a fresh PostgreSQL schema on the test server for one test, dropped afterwards."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

PG_DSN = os.environ.get("TRIAGE_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def pg_schema() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    try:
        psycopg.connect(PG_DSN, connect_timeout=2).close()
    except Exception as exc:
        pytest.skip(
            f"PostgreSQL unreachable at {PG_DSN} ({str(exc).splitlines()[0]}); start it or set TRIAGE_TEST_PG_DSN"
        )
    schema = f"triage_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    yield schema
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
