"""kill -9 after the ack: every acked event is still answered, exactly once (real processes).

A replica acks events (each written to the inbox first), is killed with SIGKILL, and comes back
(or another replica takes over); the stand-in then holds exactly one reply per event.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.support.postgres_schema import PG_DSN
from tests.support.replica import Replica
from triage_bot.testing import slack_requests as req
from triage_bot.testing.slack_standin import SIGNING_SECRET, SlackStandin
from triage_bot.testing.waiting import wait_until

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.06 GiB is free."
)


def _replies(slack: SlackStandin) -> Counter[str]:
    """Replies per thread (each event is answered in its own thread)."""
    return Counter(m.get("thread_ts", "") for m in slack.messages.get("C0INCIDENT", []))


def _idle(replica: Replica) -> bool:
    return httpx.get(replica.url + "/healthz", timeout=5).json()["jobs_in_flight"] == 0


def _send(replica: Replica, n: int, prefix: int) -> list[str]:
    stamps = []
    with req.SignedSender(replica.events_url, SIGNING_SECRET) as send:
        for i in range(n):
            ts = f"{prefix}.{i:06d}"
            sent = send.event(req.event_callback(req.message(OOM, ts=ts), event_id=f"Ev{prefix}{i:05d}"))
            assert sent.status == 200
            stamps.append(ts)
    return stamps


@pytest.fixture
def slack():
    with SlackStandin() as standin:
        yield standin


def test_events_acked_before_a_kill_are_answered_once_after_the_restart(
    slack: SlackStandin, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'bot.sqlite3'}"
    replica = Replica(slack, tmp_path, database_url=url, replica_id="a").start()
    slack.hold("chat.postMessage")  # the work after the ack cannot finish before the kill
    try:
        stamps = _send(replica, 15, 1700000600)
        replica.kill()
    finally:
        slack.release("chat.postMessage")  # what reached Slack before the kill lands now
    replica = Replica(slack, tmp_path, database_url=url, replica_id="a").start()  # same replica id
    try:
        answered = wait_until(lambda: set(_replies(slack)) >= set(stamps), 60)
    finally:
        output = replica.stop()
    assert answered, (_replies(slack), output[-4000:])
    replies = _replies(slack)
    assert {ts: replies[ts] for ts in stamps} == dict.fromkeys(stamps, 1), output[-3000:]
    # the same failure 15 times is one incident: one full answer, then "seen N times" lines
    assert sum("generic.cuda_oom" in m["text"] for m in slack.messages["C0INCIDENT"]) >= 1


def _pg_url(schema: str) -> str:
    return PG_DSN.replace("postgresql://", "postgresql+psycopg://") + f"?options=-csearch_path%3D{schema}"


def test_a_burst_of_200_with_a_replica_killed_midway_is_answered_once(
    slack: SlackStandin, tmp_path: Path, pg_schema: str
) -> None:
    url = _pg_url(pg_schema)
    fast_takeover = {"TRIAGE_INBOX_LEASE_S": "3", "TRIAGE_INBOX_GRACE_S": "2"}
    a = Replica(slack, tmp_path, database_url=url, replica_id="a", extra_env=fast_takeover).start()
    b = Replica(
        slack,
        tmp_path,
        database_url=url,
        replica_id="b",
        extra_env=fast_takeover,
        args=("--no-scheduler", "--no-migrate"),
    ).start()
    stamps = [f"1700000700.{i:06d}" for i in range(200)]
    killed = threading.Event()

    def deliver() -> None:
        """Slack delivers each event to one replica (a load balancer); a refused delivery goes to the other."""
        with (
            req.SignedSender(a.events_url, SIGNING_SECRET, timeout=5) as to_a,
            req.SignedSender(b.events_url, SIGNING_SECRET, timeout=5) as to_b,
        ):
            for i, ts in enumerate(stamps):
                if i == 100:
                    a.kill()  # mid-burst: A's acked but unfinished work is left in the inbox
                    killed.set()
                envelope = req.event_callback(req.message(OOM, ts=ts), event_id=f"EvB{i:05d}")
                first = to_a if (i % 2 == 0 and not killed.is_set()) else to_b
                try:
                    sent = first.event(envelope)
                except Exception:
                    sent = None
                if sent is None or sent.status != 200:
                    assert to_b.event(envelope, retry_num=1).status == 200

    try:
        deliver()
        assert wait_until(lambda: set(_replies(slack)) >= set(stamps), 120), len(_replies(slack))
    finally:
        output = b.stop()
    replies = _replies(slack)
    doubled = {ts: n for ts, n in replies.items() if ts in stamps and n != 1}
    assert doubled == {} and set(stamps) <= set(replies), output[-3000:]


def test_a_database_outage_with_slack_retries_answers_each_event_once(
    slack: SlackStandin, tmp_path: Path, own_postgres
) -> None:
    """The history's PostgreSQL is stopped while events and their Slack retries arrive: the local
    inbox keeps once-only, replies go out, records spool; when it is back nothing is doubled."""
    replica = Replica(slack, tmp_path, database_url=own_postgres.url, replica_id="a").start()
    own_postgres.stop("immediate")
    stamps = [f"1700000900.{i:06d}" for i in range(10)]
    try:
        with req.SignedSender(replica.events_url, SIGNING_SECRET, timeout=30) as send:
            for i, ts in enumerate(stamps):
                envelope = req.event_callback(req.message(OOM, ts=ts), event_id=f"EvOut{i:04d}")
                assert send.event(envelope).status == 200
                assert send.event(envelope, retry_num=1).status == 200  # Slack retries: answered once
        assert wait_until(lambda: set(_replies(slack)) >= set(stamps), 60), _replies(slack)
        own_postgres.start()
        with req.SignedSender(replica.events_url, SIGNING_SECRET, timeout=30) as send:
            for i, ts in enumerate(stamps):  # late retries, after the database is back
                envelope = req.event_callback(req.message(OOM, ts=ts), event_id=f"EvOut{i:04d}")
                assert send.event(envelope, retry_num=2).status == 200
        assert wait_until(lambda: _idle(replica), 30)  # the late retries were handled (by doing nothing)
    finally:
        output = replica.stop()
    replies = _replies(slack)
    assert {ts: replies[ts] for ts in stamps} == dict.fromkeys(stamps, 1), output[-3000:]
