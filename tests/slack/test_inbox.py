"""The durable inbox on its own: once-only, claims, orphans, and the local fallback."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine

from tests.support.tcp_proxy import hanging_server
from triage_bot.history.db import make_engine
from triage_bot.slack.inbox import Inbox, inbox_metadata, local_engine

BODY = {
    "event_id": "Ev1",
    "event": {"type": "message", "text": "token=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _inbox(tmp_path: Path, clock: Clock, replica: str = "a", shared: object = "sqlite") -> Inbox:
    engine = make_engine(f"sqlite:///{tmp_path / 'shared.sqlite3'}") if shared == "sqlite" else shared
    if engine is not None:
        inbox_metadata.create_all(engine)
    return Inbox(
        engine,
        local_engine(tmp_path / f"local-{replica}.sqlite3"),
        replica=replica,
        clock=clock,
        lease=timedelta(seconds=60),
        pending_grace=timedelta(seconds=30),
    )


def test_a_request_is_accepted_once_claimed_once_and_done(tmp_path: Path) -> None:
    clock = Clock()
    inbox = _inbox(tmp_path, clock)
    assert inbox.accept("Ev1", "message", BODY) is True
    assert inbox.accept("Ev1", "message", BODY) is False  # a Slack retry
    assert inbox.claim("Ev1") is True
    assert inbox.claim("Ev1") is False  # the retry's work finds it taken
    inbox.done("Ev1")
    [row] = inbox.rows()
    assert (row["state"], row["local"], row["attempts"]) == ("done", False, 1)
    assert "hf_AbCd" not in str(row["body"])  # stored redacted like everything else


def test_two_replicas_share_one_inbox(tmp_path: Path) -> None:
    clock = Clock()
    a, b = _inbox(tmp_path, clock, "a"), _inbox(tmp_path, clock, "b")
    assert a.accept("Ev1", "message", BODY) is True
    assert b.accept("Ev1", "message", BODY) is False  # the same event delivered to the other replica
    assert b.claim("Ev1") is True and a.claim("Ev1") is False


def test_unfinished_work_is_taken_over_once(tmp_path: Path) -> None:
    clock = Clock()
    a = _inbox(tmp_path, clock, "a")
    a.accept("Ev-pending", "message", BODY)  # acked, then the process died before it started
    a.accept("Ev-running", "message", BODY)
    assert a.claim("Ev-running")  # ... or while it ran
    b = _inbox(tmp_path, clock, "b")
    assert b.orphans() == []  # too young: its acceptor may still be on it
    clock.now += timedelta(seconds=31)
    assert [o.key for o in b.orphans()] == ["Ev-pending"]
    clock.now += timedelta(seconds=30)  # the running row's lease is over
    assert [o.key for o in b.orphans()] == ["Ev-running"]
    assert b.orphans() == [] and a.orphans() == []  # each taken once


def test_a_restarted_replica_takes_its_own_rows_at_once(tmp_path: Path) -> None:
    clock = Clock()
    first = _inbox(tmp_path, clock, "a")
    first.accept("Ev-pending", "message", BODY)
    first.accept("Ev-running", "message", BODY)
    first.claim("Ev-running")
    clock.now += timedelta(seconds=1)
    again = _inbox(tmp_path, clock, "a")  # kill -9, restart with the same replica id
    assert sorted(o.key for o in again.orphans()) == ["Ev-pending", "Ev-running"]
    other = _inbox(tmp_path, clock, "b")
    assert other.orphans() == []


def test_with_the_database_away_once_only_holds_through_the_local_inbox(tmp_path: Path) -> None:
    clock = Clock()
    away = create_engine("sqlite:////nonexistent/dir/shared.sqlite3")
    inbox = Inbox(away, local_engine(tmp_path / "local.sqlite3"), replica="a", clock=clock)
    assert inbox.accept("Ev1", "message", BODY) is True
    assert inbox.accept("Ev1", "message", BODY) is False
    assert inbox.claim("Ev1") is True and inbox.claim("Ev1") is False
    inbox.done("Ev1")
    [row] = _local_rows(inbox)
    assert (row["key"], row["state"]) == ("Ev1", "done")


def test_rows_left_in_the_local_inbox_are_found_after_a_restart(tmp_path: Path) -> None:
    """The local inbox is looked at only once it holds a row: a replica restarted with local rows
    from a database outage still finds them (a retry stays a retry, an unfinished one is resumed)."""
    clock = Clock()
    away = create_engine("sqlite:////nonexistent/dir/shared.sqlite3")
    down = Inbox(away, local_engine(tmp_path / "local.sqlite3"), replica="a", clock=clock)
    assert down.accept("Ev-local", "message", BODY) is True
    clock.now += timedelta(seconds=1)
    shared = make_engine(f"sqlite:///{tmp_path / 'shared.sqlite3'}")
    inbox_metadata.create_all(shared)
    back = Inbox(shared, local_engine(tmp_path / "local.sqlite3"), replica="a", clock=clock)
    assert back.accept("Ev-local", "message", BODY) is False  # Slack's retry of the same event
    assert [o.key for o in back.orphans()] == ["Ev-local"]  # ours, from before the restart
    fresh = Inbox(shared, local_engine(tmp_path / "other.sqlite3"), replica="b", clock=clock)
    assert fresh.accept("Ev-new", "message", BODY) is True
    assert [r["local"] for r in fresh.rows() if r["key"] == "Ev-new"] == [False]


def _local_rows(inbox: Inbox) -> list[dict]:
    from sqlalchemy import select

    from triage_bot.slack.inbox import inbox_table

    with inbox.local.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(inbox_table))]


def test_a_hung_database_costs_the_ack_its_deadline_once_not_every_time(tmp_path: Path) -> None:
    clock = Clock()
    with hanging_server() as hung:
        engine = make_engine(f"postgresql://u@127.0.0.1:{hung.port}/db", connect_args={"connect_timeout": 30})
        inbox = Inbox(
            engine,
            local_engine(tmp_path / "local.sqlite3"),
            replica="a",
            clock=clock,
            write_deadline_s=0.5,
            down_for=timedelta(seconds=10),
        )
        started = time.monotonic()
        assert inbox.accept("Ev1", "message", BODY) is True
        waited = time.monotonic() - started
        for n in range(20):
            assert inbox.accept(f"Ev{n + 2}", "message", BODY) is True
        tried = hung.accepted
        inbox.close()
    assert waited < 10  # the 0.5 s deadline (with room for a loaded machine), not the 30 s connect timeout
    assert tried == 1  # marked down after the first hang: the other 20 requests did not wait for it
    assert len(_local_rows(inbox)) == 21
