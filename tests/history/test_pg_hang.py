"""A PostgreSQL that hangs (accepts, then never answers): one deadline, then the spool at once."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.tcp_proxy import HangableProxy
from triage_bot.history import HistoryStore, Sighting
from triage_bot.history.db import make_engine, make_session_factory
from triage_bot.history.models import Base
from triage_bot.history.spool import Spool


@pytest.fixture
def proxied(new_pg_schema):
    url = new_pg_schema()
    target = urlsplit(url)
    with HangableProxy(target.hostname or "127.0.0.1", target.port or 5432) as proxy:
        yield proxy, url.replace(f"@{target.hostname}:{target.port or 5432}", f"@127.0.0.1:{proxy.port}")


def test_a_database_that_hangs_mid_session_costs_one_deadline(proxied, tmp_path: Path) -> None:
    proxy, url = proxied
    engine = make_engine(url, statement_deadline_s=1.0)
    Base.metadata.create_all(engine)
    store = HistoryStore(make_session_factory(engine), spool=Spool(tmp_path / "spool.jsonl"), retry_after=0)
    now = datetime.now(UTC)
    assert not store.record(Sighting("generic.cuda_oom", "vllm", "llama-prod", seen_at=now)).spooled
    proxy.hang()  # the pooled connection stays open; nothing comes back any more
    started = time.monotonic()
    first = store.record(Sighting("generic.cuda_oom", "vllm", "llama-prod", excerpt="during 0", seen_at=now))
    waited = time.monotonic() - started
    connections = proxy.accepted
    rest = [
        store.record(Sighting("generic.cuda_oom", "vllm", "llama-prod", excerpt=f"during {i}", seen_at=now))
        for i in range(1, 20)
    ]
    assert first.spooled and all(r.spooled for r in rest)  # nothing lost: all wait in the spool
    assert waited < 20  # bounded by the 1 s statement deadline (and a connect timeout), not for ever
    assert proxy.accepted - connections <= 1  # the other 19 failed fast: no new wait on the hung server
    assert len(Spool(tmp_path / "spool.jsonl")) == 20
    engine.dispose()


def test_a_late_deadline_never_shuts_a_socket_that_reused_the_connections_number() -> None:
    """The watchdog keeps the descriptor number of a statement's connection; when the connection is
    closed before the deadline passes, that number can belong to another socket (in the test suite it
    was a web server's listening socket, which then closed). The late kill must leave it alone."""
    import socket

    import psycopg

    from tests.support.postgres_schema import PG_DSN
    from triage_bot.history.db_guard import connection_killer

    raw = psycopg.connect(PG_DSN)
    kills: list[int] = []
    late = connection_killer(raw, lambda: kills.append(1))
    number = raw.pgconn.socket
    raw.close()
    a, b = socket.socketpair()
    try:
        assert number in (a.fileno(), b.fileno())  # the number is someone else's now
        mine, other = (a, b) if a.fileno() == number else (b, a)
        late()
        assert kills == []
        mine.sendall(b"still open")  # a shut socket would raise BrokenPipeError here
        assert other.recv(16) == b"still open"
    finally:
        a.close()
        b.close()

    live = psycopg.connect(PG_DSN)
    try:
        connection_killer(live, lambda: kills.append(1))()  # a live connection past its deadline is cut
        assert kills == [1]
        with pytest.raises(psycopg.OperationalError):
            live.execute("SELECT 1")
    finally:
        live.close()


def test_a_pinged_connection_is_not_left_in_a_transaction(new_pg_schema) -> None:
    """The checkout ping ends its own transaction: a connection can still be switched to autocommit
    (psycopg refuses on a connection 'idle in transaction'), and none is handed out holding a snapshot."""
    from sqlalchemy import text

    engine = make_engine(new_pg_schema())
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            assert connection.execute(text("SELECT 1")).scalar() == 1
        with engine.connect() as connection:
            status = connection.connection.dbapi_connection.info.transaction_status  # type: ignore[union-attr]
            assert status.name == "IDLE"
    finally:
        engine.dispose()
