"""A real PostgreSQL outage: the test runs its own server (tests/support/own_postgres.py), stops it
mid-run and starts it again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.support.own_postgres import OwnPostgres
from triage_bot.history import HistoryStore, Sighting, Spool, StorageUnavailable
from triage_bot.history.db import make_engine
from triage_bot.history.models import Base, EngineCheck, Occurrence


def test_records_survive_a_postgres_restart_in_order(own_postgres: OwnPostgres, tmp_path: Path) -> None:
    engine = make_engine(own_postgres.url)
    Base.metadata.create_all(engine)
    spool_path = tmp_path / "spool.jsonl"
    store = HistoryStore.from_url(own_postgres.url, spool=Spool(spool_path), retry_after=0)
    sig, now = "vllm.kv_cache_no_memory", datetime.now(UTC)

    made = [Sighting(sig, "vllm", "llama-prod", excerpt=f"before {i}", seen_at=now) for i in range(3)]
    assert not any(store.record(o).spooled for o in made)

    own_postgres.stop("immediate")  # as abrupt as a crash; pooled connections die with it
    during = [Sighting(sig, "vllm", "llama-prod", excerpt=f"during {i}", seen_at=now) for i in range(10)]
    assert all(store.record(o).spooled for o in during[:5])
    assert store.record_check("llama-prod", "down", checked_at=now) is None
    with pytest.raises(StorageUnavailable):
        store.history()
    # The bot restarts while the database is still down: the new process appends behind the old spool.
    restarted = HistoryStore.from_url(own_postgres.url, spool=Spool(spool_path), retry_after=0)
    assert all(restarted.record(o).spooled for o in during[5:])
    assert len(Spool(spool_path)) == 11

    own_postgres.start()
    last = Sighting(sig, "vllm", "llama-prod", excerpt="after", seen_at=now)
    result = store.record(last)  # the first store recovers by itself: pre-ping replaces dead connections
    assert not result.spooled and Spool(spool_path).is_empty()
    assert result.occurrence_count == 14 and not result.is_new  # dedup held across the outage

    with engine.connect() as connection:
        stored = connection.execute(select(Occurrence.key).order_by(Occurrence.id)).scalars().all()
        checks = connection.execute(select(func.count()).select_from(EngineCheck)).scalar_one()
    assert stored == [o.key for o in [*made, *during, last]]  # nothing lost, nothing doubled, in order
    assert checks == 1
    assert not (tmp_path / "spool.jsonl.rejected").exists()
    engine.dispose()
