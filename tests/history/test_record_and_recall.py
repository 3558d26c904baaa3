"""record_and_recall: an answer's record and what the answer says about it, in one transaction."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Engine, event

from tests.support.storage import Switch
from triage_bot.history import HistoryStore, Sighting

SIG = "vllm.kv_cache_no_memory"


def paste(at: datetime, **kw: object) -> Sighting:
    fields: dict[str, object] = {"signature_id": SIG, "engine": "vllm", "channel": "C1", "seen_at": at}
    fields.update(kw)
    return Sighting(**fields)  # type: ignore[arg-type]


def transactions(engine: Engine) -> list[int]:
    begun: list[int] = []
    event.listen(engine, "begin", lambda _connection: begun.append(1))
    return begun


def test_a_first_paste_is_new_and_recalls_nothing(store: HistoryStore, engine: Engine, now: datetime) -> None:
    begun = transactions(engine)
    recall = store.record_and_recall(paste(now))
    assert len(begun) == 1  # the record and every read behind the answer
    assert recall.result.is_new and recall.result.incident_id is not None
    assert recall.incident is None and recall.previous is None and recall.mute is None


def test_a_repeat_recalls_its_open_incident(store: HistoryStore, now: datetime) -> None:
    first = store.record_and_recall(paste(now - timedelta(hours=2)))
    again = store.record_and_recall(paste(now))
    assert again.result.incident_id == first.result.incident_id and again.result.occurrence_count == 2
    assert again.incident is not None and again.incident.first_seen == now - timedelta(hours=2)


def test_a_recurrence_recalls_who_resolved_the_last_one(store: HistoryStore, now: datetime) -> None:
    first = store.record_and_recall(paste(now - timedelta(days=2)))
    assert first.result.incident_id is not None
    store.resolve(
        first.result.incident_id,
        by="U_ONCALL",
        note="raised --gpu-memory-utilization",
        at=now - timedelta(days=1),
    )
    back = store.record_and_recall(paste(now))
    assert back.result.is_recurring and back.result.incident_id != first.result.incident_id
    assert back.previous is not None and back.previous.incidents == 1
    assert back.previous.last_resolved_by == "U_ONCALL"
    assert back.previous.last_resolution == "raised --gpu-memory-utilization"


def test_a_muted_failure_recalls_its_mute(store: HistoryStore, now: datetime) -> None:
    store.mute(signature_id=SIG, duration=timedelta(hours=4), by="U_ADMIN", reason="known, fix rolling out")
    recall = store.record_and_recall(paste(now))
    assert recall.result.muted
    assert recall.mute is not None and recall.mute.created_by == "U_ADMIN"


def test_with_the_database_away_it_is_spooled_and_recalls_nothing(
    flaky: HistoryStore, switch: Switch, now: datetime
) -> None:
    switch.down = True
    recall = flaky.record_and_recall(paste(now))
    assert recall.result.spooled and recall.incident is None and recall.previous is None
    switch.down = False
    replayed = flaky.record_and_recall(paste(now + timedelta(seconds=1)))
    assert replayed.result.occurrence_count == 2  # the spooled one replayed first, as a plain record
