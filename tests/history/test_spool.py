"""Nothing lost: writes wait in a bounded spool while the database is away and replay in order."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from tests.support.storage import Switch
from triage_bot.history import HistoryStore, Sighting, Spool, SpoolFullError, StorageUnavailable
from triage_bot.history.errors import is_unavailable
from triage_bot.history.models import EngineCheck, Incident, Occurrence

SIG = "vllm.kv_cache_no_memory"


class Down(Exception):
    """Stands for a connection error in the unit tests of the spool itself."""


def unavailable(error: BaseException) -> bool:
    return isinstance(error, Down)


# -- the spool on its own -------------------------------------------------------------------------


def test_appends_are_kept_in_order_across_instances(tmp_path: Path) -> None:
    first = Spool(tmp_path / "s.jsonl")
    for i in range(5):
        first.append("record", {"i": i})
    second = Spool(tmp_path / "s.jsonl")  # a restarted process
    assert len(second) == 5
    assert [args["i"] for _, args in second.pending()] == [0, 1, 2, 3, 4]
    assert oct((tmp_path / "s.jsonl").stat().st_mode & 0o777) == "0o600"


def test_full_spool_refuses_loudly_and_keeps_the_oldest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = Spool(tmp_path / "s.jsonl", max_records=3)
    for i in range(3):
        spool.append("record", {"i": i})
    with caplog.at_level(logging.ERROR), pytest.raises(SpoolFullError, match="spool full"):
        spool.append("record", {"i": 3, "signature_id": SIG})
    assert "REFUSED record" in caplog.text and SIG in caplog.text
    assert [args["i"] for _, args in spool.pending()] == [0, 1, 2]


def test_byte_bound(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.jsonl", max_bytes=450)  # each line is ~194 bytes
    spool.append("record", {"x": "a" * 100})
    spool.append("record", {"x": "a" * 100})
    with pytest.raises(SpoolFullError):
        spool.append("record", {"x": "a" * 100})


def test_drain_applies_in_order_and_stops_when_the_database_is_away(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.jsonl", batch=3)
    for i in range(10):
        spool.append("record", {"i": i})
    seen: list[int] = []
    database = {"up": False}

    def apply(op: str, args: dict) -> None:
        if args["i"] == 7 and not database["up"]:
            raise Down()
        seen.append(args["i"])

    first = spool.drain(apply, unavailable)
    assert first.stopped and first.applied == 7 and first.remaining == 3
    assert [args["i"] for _, args in spool.pending()] == [7, 8, 9]
    database["up"] = True
    second = spool.drain(apply, unavailable)
    assert not second.stopped and second.remaining == 0 and spool.is_empty()
    assert seen == list(range(10))


def test_bad_lines_go_to_the_rejected_file_not_away(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.jsonl"
    spool = Spool(path)
    spool.append("record", {"i": 0})
    with open(path, "ab") as handle:
        handle.write(b'{"v": 1, "op": "rec')  # torn write from a crash, no newline
    spool.append("record", {"i": 1})  # starts on a new line
    spool.append("record", {"i": 2, "poison": True})
    applied: list[int] = []

    def apply(op: str, args: dict) -> None:
        if args.get("poison"):
            raise ValueError("incident 99 does not exist")
        applied.append(args["i"])

    with caplog.at_level(logging.ERROR):
        result = spool.drain(apply, unavailable)
    assert (result.applied, result.rejected, result.remaining) == (2, 2, 0)
    assert applied == [0, 1]
    rejected = [json.loads(line) for line in spool.rejected_path.read_text().splitlines()]
    assert [r["reason"].split(":")[0] for r in rejected] == ["unreadable spool line", "ValueError"]
    assert "rejected a record" in caplog.text


def test_torn_last_line_does_not_block_the_spool(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"v": 1, "op": "record", "args": {"i"')
    spool = Spool(path)
    result = spool.drain(lambda op, args: None, unavailable)
    assert result.rejected == 1 and spool.is_empty()


def test_threads_append_whole_lines(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.jsonl")

    def work(n: int) -> None:
        for i in range(50):
            spool.append("record", {"thread": n, "i": i, "pad": "x" * 500})

    pool = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    pending = spool.pending()
    assert len(pending) == 300
    for n in range(6):
        assert [a["i"] for _, a in pending if a["thread"] == n] == list(range(50))


# -- the store with a database that goes away ------------------------------------------------------


def keys(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.execute(select(Occurrence.key).order_by(Occurrence.id)).scalars())


def test_outage_spools_then_replays_in_order(
    flaky: HistoryStore, switch: Switch, spool: Spool, engine: Engine, now: datetime
) -> None:
    before = flaky.record(Sighting(SIG, "vllm", "llama-prod", seen_at=now - timedelta(minutes=30)))
    switch.down = True
    waiting = [
        Sighting(SIG, "vllm", "llama-prod", excerpt=f"HF_TOKEN=hf_{'a1' * 17} #{i}", seen_at=now)
        for i in range(20)
    ]
    results = [flaky.record(o) for o in waiting]
    assert all(r.spooled and r.incident_id is None for r in results)
    assert flaky.record_check("llama-prod", "down", checked_at=now) is None
    assert flaky.resolve(before.incident_id, "U1", at=now) is None
    assert len(spool) == 22
    assert "hf_a1a1" not in spool.path.read_text()  # redacted before it touched the disk
    with pytest.raises(StorageUnavailable):
        flaky.history()
    assert flaky.mark_event_once("EvDURING") is True  # answer rather than drop

    switch.down = False
    after = flaky.record(Sighting(SIG, "vllm", "llama-prod", seen_at=now + timedelta(seconds=1)))
    assert not after.spooled and spool.is_empty()
    stored = keys(engine)
    assert len(stored) == 22 and stored[1:21] == [o.key for o in waiting]  # in the order they were made
    newest, first = flaky.history()
    assert first.id == before.incident_id and first.occurrence_count == 21
    assert first.status == "resolved"  # the spooled resolve ran after the spooled records, as it was issued
    assert newest.is_recurring and newest.occurrence_count == 1
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(EngineCheck)).scalar_one() == 1


def test_full_spool_during_outage_raises_and_keeps_the_rest(
    switch: Switch, engine: Engine, tmp_path: Path, now: datetime
) -> None:
    store = HistoryStore(switch, spool=Spool(tmp_path / "small.jsonl", max_records=5), retry_after=0)  # type: ignore[arg-type]
    switch.down = True
    for i in range(5):
        assert store.record(Sighting(SIG, "vllm", excerpt=str(i), seen_at=now)).spooled
    with pytest.raises(SpoolFullError):
        store.record(Sighting(SIG, "vllm", excerpt="refused", seen_at=now))
    switch.down = False
    result = store.flush_spool()
    assert result is not None and result.applied == 5 and result.remaining == 0
    assert len(keys(engine)) == 5


def test_replay_after_a_crash_mid_flush_does_not_double_count(
    flaky: HistoryStore, switch: Switch, spool: Spool, engine: Engine, tmp_path: Path, now: datetime
) -> None:
    switch.down = True
    for i in range(4):
        flaky.record(Sighting(SIG, "vllm", excerpt=str(i), seen_at=now))
    copy = tmp_path / "copy.jsonl"
    shutil.copy(spool.path, copy)
    switch.down = False
    flaky.flush_spool()
    shutil.copy(copy, spool.path)  # as if the process died before the spool file was compacted
    result = flaky.flush_spool()
    assert result is not None and result.applied == 4
    assert len(keys(engine)) == 4
    with engine.connect() as connection:
        assert connection.execute(select(Incident.occurrence_count)).scalar_one() == 4


def test_spooled_write_that_can_no_longer_apply_is_rejected_not_blocking(
    flaky: HistoryStore, switch: Switch, spool: Spool, now: datetime
) -> None:
    switch.down = True
    flaky.resolve(424242, "U1")  # no such incident: only discovered at replay
    flaky.record(Sighting(SIG, "vllm", seen_at=now))
    switch.down = False
    result = flaky.flush_spool()
    assert result is not None and (result.applied, result.rejected) == (1, 1)
    assert "IncidentNotFound" in spool.rejected_path.read_text()


def test_real_errors_are_not_mistaken_for_an_outage() -> None:
    from sqlalchemy.exc import OperationalError, ProgrammingError

    assert is_unavailable(StorageUnavailable("x"))
    assert not is_unavailable(ValueError("x"))
    sqlite_missing_table = OperationalError("select", None, sqlite3.OperationalError("no such table: x"))
    assert not is_unavailable(sqlite_missing_table)
    assert not is_unavailable(ProgrammingError("select", None, Exception("syntax error")))
