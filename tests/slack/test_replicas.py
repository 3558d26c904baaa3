"""Two replicas on one PostgreSQL: an event delivered to both is answered once; an outbox row is sent once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, text

from tests.support.schema import create_every_table
from tests.support.slack_env import KV_ERROR, start_env, stop_env
from tests.support.storage import PG_URL, pg_problem, with_schema
from triage_bot.history import HistoryStore
from triage_bot.testing import slack_requests as req


@pytest.fixture
def pg_url() -> Iterator[str]:
    problem = pg_problem()
    if problem:
        pytest.skip(f"PostgreSQL unreachable at {PG_URL} ({problem})")
    import os
    import secrets

    schema = f"triage_slack_{os.getpid()}_{secrets.token_hex(4)}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = with_schema(PG_URL, schema)
    store = HistoryStore.from_url(url)
    create_every_table(store.session_factory.kw["bind"])
    store.session_factory.kw["bind"].dispose()
    yield url
    with admin.connect() as connection:
        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    admin.dispose()


def test_two_replicas_answer_each_event_once(slack, triager, pg_url: str) -> None:
    replicas = [start_env(slack, triager, HistoryStore.from_url(pg_url)) for _ in range(2)]
    try:
        envelopes = [
            req.event_callback(req.message(KV_ERROR, ts=f"1700000000.{n:06d}"), bot_user_id=slack.bot_user_id)
            for n in range(20)
        ]
        barrier = threading.Barrier(4)

        def deliver(replica_index: int, retry: int) -> None:
            barrier.wait()
            for envelope in envelopes:  # every event reaches both replicas, twice
                assert replicas[replica_index].send.event(envelope, retry_num=retry or None).status == 200

        threads = [threading.Thread(target=deliver, args=(i % 2, i // 2)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for replica in replicas:
            replica.settle()
        threads_answered = sorted(body["thread_ts"] for body in slack.bodies("chat.postMessage"))
        assert threads_answered == sorted(f"1700000000.{n:06d}" for n in range(20))
    finally:
        for replica in replicas:
            stop_env(replica)


def test_two_sweepers_send_an_outbox_row_once(slack, triager, pg_url: str) -> None:
    replicas = [
        start_env(slack, triager, HistoryStore.from_url(pg_url), rate_limit_retries=0) for _ in range(2)
    ]
    try:
        slack.rate_limit("chat.postMessage", times=1, retry_after=1)
        replicas[0].event(req.message(KV_ERROR))
        replicas[0].settle()
        assert [row["state"] for row in replicas[0].bot.deps.store.rows()] == ["pending"]
        later = datetime.now(UTC) + timedelta(minutes=1)
        landed: list[int] = []
        threads = [
            threading.Thread(target=lambda r=r: landed.append(r.bot.delivery.sweep(now=later)))
            for r in replicas
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(landed) == [0, 1] and len(slack.bodies("chat.postMessage")) == 1
    finally:
        for replica in replicas:
            stop_env(replica)
