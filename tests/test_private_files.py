"""Every file the bot writes on the local disk is 0600: the database, spool and rejects, locks, claims."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

from triage_bot.history import HistoryStore
from triage_bot.history.models import Base
from triage_bot.history.spool import Spool
from triage_bot.scheduler import LocalCoordinator


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_local_files_are_private(tmp_path: Path) -> None:
    store = HistoryStore.from_url(f"sqlite:///{tmp_path / 'history.sqlite3'}")
    Base.metadata.create_all(store.session_factory.kw["bind"])
    store.mark_event_once("Ev1")  # a write: SQLite creates its -wal and -shm files
    spool = Spool(tmp_path / "spool.jsonl")
    spool.append("record", {"x": 1})
    spool._reject(b"not json at all", "a test reject")
    lock = tmp_path / "history.sqlite3.scheduler.lock"
    coordinator = LocalCoordinator(lock)
    coordinator.start()
    try:
        assert coordinator.claim("weekly_digest", datetime(2026, 1, 5, 9, tzinfo=UTC))
    finally:
        coordinator.stop()
    written = sorted(p for p in tmp_path.iterdir() if p.is_file())
    assert {p.name for p in written} >= {
        "history.sqlite3",
        "spool.jsonl",
        "spool.jsonl.rejected",
        "history.sqlite3.scheduler.lock",
        "history.sqlite3.scheduler.lock.claims",
    }
    assert {p.name: oct(_mode(p)) for p in written} == {p.name: oct(0o600) for p in written}
