"""Separate processes (bot replicas) writing the same fingerprint at the same moment: one incident."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime

from sqlalchemy import func, select

from triage_bot.history import HistoryStore, Sighting
from triage_bot.history.db import make_engine
from triage_bot.history.models import Incident, Occurrence

PROCESSES = 6
PER_PROCESS = 20


def _replica(url: str, barrier, results) -> None:  # runs in a child process
    store = HistoryStore.from_url(url)
    barrier.wait(timeout=30)
    new = 0
    for _ in range(PER_PROCESS):
        seen = Sighting("generic.nccl_timeout", "vllm", "llama-prod", seen_at=datetime.now(UTC))
        result = store.record(seen)
        new += result.is_new
    handled = sum(store.mark_event_once(f"Ev{i}") for i in range(10))
    results.put((new, handled))


def test_replicas_converge_on_one_incident_and_handle_each_event_once(db_url: str) -> None:
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    children = [context.Process(target=_replica, args=(db_url, barrier, results)) for _ in range(PROCESSES)]
    for child in children:
        child.start()
    outcomes = [results.get(timeout=60) for _ in children]
    for child in children:
        child.join(timeout=30)
        assert child.exitcode == 0
    assert sum(new for new, _ in outcomes) == 1
    assert sum(handled for _, handled in outcomes) == 10
    engine = make_engine(db_url)
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(Incident)).scalar_one() == 1
        total = PROCESSES * PER_PROCESS
        assert connection.execute(select(Incident.occurrence_count)).scalar_one() == total
        assert connection.execute(select(func.count()).select_from(Occurrence)).scalar_one() == total
    engine.dispose()
