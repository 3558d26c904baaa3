"""Recording: dedup on the fingerprint with a sliding window, recurrence, concurrency, feedback."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from triage_bot.history import HistoryStore, IncidentNotFound, Sighting, fingerprint
from triage_bot.history.models import Feedback, Incident, Occurrence

SIG = "vllm.kv_cache_no_memory"


def obs(at: datetime | None = None, **kw: object) -> Sighting:
    fields: dict[str, object] = {"signature_id": SIG, "engine": "vllm", "target": "llama-prod", "seen_at": at}
    fields.update(kw)
    return Sighting(**fields)  # type: ignore[arg-type]


def count(engine: Engine, model: type) -> int:
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(model)).scalar_one()


def test_fingerprint_ignores_case_and_space_but_not_parts() -> None:
    assert fingerprint(SIG, "vLLM ", "llama-prod") == fingerprint(SIG, "vllm", "LLAMA-PROD")
    assert fingerprint(SIG, "vllm", "a") != fingerprint(SIG, "vllm", "b")
    assert fingerprint("a.b", "c", "") != fingerprint("a", "b.c", "")


def test_repeat_within_window_joins_the_open_incident(store: HistoryStore, now: datetime) -> None:
    first = store.record(obs(now - timedelta(hours=5), excerpt="one"))
    second = store.record(obs(now - timedelta(hours=1), excerpt="two with other text"))
    assert first.is_new and not first.is_recurring and first.occurrence_count == 1
    assert second.incident_id == first.incident_id
    assert not second.is_new and second.occurrence_count == 2
    incident = store.get_incident(first.incident_id)
    assert incident is not None and incident.active and incident.status == "open"
    assert incident.first_seen == now - timedelta(hours=5) and incident.last_seen == now - timedelta(hours=1)


def test_window_slides_from_the_last_occurrence(store: HistoryStore, now: datetime) -> None:
    results = [store.record(obs(now - timedelta(hours=h))) for h in (20, 15, 10, 5, 0)]  # 5 h apart
    assert {r.incident_id for r in results} == {results[0].incident_id}
    assert results[-1].occurrence_count == 5


def test_repeat_after_window_opens_a_recurring_incident(store: HistoryStore, now: datetime) -> None:
    first = store.record(obs(now - timedelta(hours=13)))
    later = store.record(obs(now - timedelta(hours=6, minutes=59)))  # 6 h 01 min later
    assert later.incident_id != first.incident_id
    assert later.is_new and later.is_recurring
    old = store.get_incident(first.incident_id)
    new = store.get_incident(later.incident_id)
    assert old is not None and not old.active and old.status == "open"
    assert new is not None and new.previous_incident_id == first.incident_id


def test_repeat_after_resolution_opens_a_recurring_incident(store: HistoryStore, now: datetime) -> None:
    first = store.record(obs(now - timedelta(minutes=30)))
    assert store.resolve(first.incident_id, "U042", "raised --gpu-memory-utilization to 0.95") is True
    assert store.resolve(first.incident_id, "U042") is False  # already resolved: no change
    again = store.record(obs(now))
    assert again.incident_id != first.incident_id and again.is_new and again.is_recurring


def test_different_target_or_signature_is_a_different_incident(store: HistoryStore, now: datetime) -> None:
    a = store.record(obs(now))
    b = store.record(obs(now, target="llama-staging"))
    c = store.record(obs(now, signature_id="generic.cuda_oom"))
    assert len({a.incident_id, b.incident_id, c.incident_id}) == 3
    assert not (b.is_recurring or c.is_recurring)


def test_target_defaults_to_channel_and_engine_to_unknown(store: HistoryStore, now: datetime) -> None:
    result = store.record(Sighting(SIG, None, channel="C0123", seen_at=now))
    incident = store.get_incident(result.incident_id)
    assert incident is not None and (incident.engine, incident.target) == ("unknown", "C0123")


def test_same_observation_twice_is_stored_once(store: HistoryStore, engine: Engine, now: datetime) -> None:
    observation = obs(now)
    first = store.record(observation)
    replay = store.record(observation)  # e.g. the spool replayed after a crash mid-flush
    assert replay.duplicate and replay.occurrence_id == first.occurrence_id
    assert replay.occurrence_count == 1 and count(engine, Occurrence) == 1


def test_late_older_observation_extends_first_seen(store: HistoryStore, now: datetime) -> None:
    store.record(obs(now))
    late = store.record(obs(now - timedelta(hours=1)))  # replayed from the spool after newer ones
    incident = store.get_incident(late.incident_id)
    assert incident is not None and incident.first_seen == now - timedelta(hours=1)
    assert incident.last_seen == now


@pytest.mark.parametrize("stale", [False, True], ids=["open incident", "incident past its window"])
def test_concurrent_writers_produce_one_incident(
    store: HistoryStore, engine: Engine, now: datetime, stale: bool
) -> None:
    """8 threads, each with its own connection, record the same fingerprint at the same moment."""
    if stale:
        store.record(obs(now - timedelta(hours=7)))
    threads, per_thread = 8, 15
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []
    results = []

    def work() -> None:
        try:
            barrier.wait()
            for _ in range(per_thread):
                results.append(store.record(obs(now)))
        except BaseException as error:  # surfaced below
            errors.append(error)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert not errors
    assert len({r.incident_id for r in results}) == 1
    assert sum(r.is_new for r in results) == 1
    assert not any(r.spooled for r in results)
    with engine.connect() as connection:
        active = connection.execute(
            select(Incident.occurrence_count).where(Incident.active_key.is_not(None))
        ).all()
    assert active == [(threads * per_thread,)]
    assert count(engine, Incident) == (2 if stale else 1)
    assert count(engine, Occurrence) == threads * per_thread + (1 if stale else 0)


def test_feedback_vote_is_replaced_and_acknowledges(
    store: HistoryStore, engine: Engine, now: datetime
) -> None:
    result = store.record(obs(now - timedelta(hours=1)))
    store.record_feedback(result.incident_id, "U1", "helpful", at=now - timedelta(minutes=50))
    store.record_feedback(result.incident_id, "U1", "wrong_match", "generic.cuda_oom")
    store.record_feedback(result.incident_id, "U2", "helpful")
    with engine.connect() as connection:
        votes = connection.execute(
            select(Feedback.user_id, Feedback.kind, Feedback.correct_signature_id).order_by(Feedback.user_id)
        ).all()
    assert votes == [("U1", "wrong_match", "generic.cuda_oom"), ("U2", "helpful", None)]
    incident = store.get_incident(result.incident_id)
    assert incident is not None and incident.status == "acknowledged" and incident.acknowledged_by == "U1"
    assert incident.acknowledged_at == now - timedelta(minutes=50)


def test_resolved_vote_resolves(store: HistoryStore, now: datetime) -> None:
    result = store.record(obs(now))
    store.record_feedback(result.incident_id, "U7", "resolved")
    incident = store.get_incident(result.incident_id)
    assert incident is not None and incident.status == "resolved" and incident.resolved_by == "U7"


def test_acknowledge_counts_only_the_first_response(store: HistoryStore, now: datetime) -> None:
    result = store.record(obs(now))
    assert store.acknowledge(result.incident_id, "U1") is True
    assert store.acknowledge(result.incident_id, "U2") is False
    incident = store.get_incident(result.incident_id)
    assert incident is not None and incident.acknowledged_by == "U1"


def test_unknown_incident_is_a_clear_error(store: HistoryStore) -> None:
    with pytest.raises(IncidentNotFound):
        store.resolve(999_999, "U1")
    with pytest.raises(IncidentNotFound):
        store.record_feedback(999_999, "U1", "helpful")
    with pytest.raises(IncidentNotFound):
        store.acknowledge(999_999, "U1")


def test_resolve_active_closes_the_health_incident(store: HistoryStore, now: datetime) -> None:
    down = store.record(obs(now, signature_id="health.engine_down", source="health", severity="critical"))
    assert (
        store.resolve_active("health.engine_down", "vllm", "llama-prod", by="health-check")
        == down.incident_id
    )
    assert store.resolve_active("health.engine_down", "vllm", "llama-prod", by="health-check") is None


def test_mute_marks_new_incidents_and_expires(store: HistoryStore, now: datetime) -> None:
    mute_id = store.mute(SIG, duration=timedelta(hours=1), by="U1", reason="known, fix deploying")
    muted = store.record(obs(now))
    assert muted.muted and muted.status == "muted"
    other_engine = store.record(obs(now, signature_id="generic.cuda_oom"))
    assert not other_engine.muted
    info = store.is_muted(SIG, "vllm")
    assert info is not None and info.reason == "known, fix deploying"
    assert store.unmute(mute_id) is True
    assert store.is_muted(SIG, "vllm") is None


def test_engine_mute_matches_kind_or_instance(store: HistoryStore) -> None:
    store.mute(engine="llama-prod", duration=timedelta(minutes=5), by="U1")
    assert store.is_muted("generic.cuda_oom", "vllm", "llama-prod") is not None
    assert store.is_muted("generic.cuda_oom", "vllm", "llama-dev") is None
    assert [m.engine for m in store.active_mutes()] == ["llama-prod"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"duration": timedelta(0)},
        {"duration": timedelta(days=400)},
        {"duration": timedelta(hours=1), "until": datetime(2030, 1, 1)},
        {"signature_id": None, "engine": None, "duration": timedelta(hours=1)},
    ],
)
def test_bad_mutes_are_refused(store: HistoryStore, kwargs: dict) -> None:
    arguments = {"signature_id": SIG, "by": "U1", **kwargs}
    with pytest.raises(ValueError):
        store.mute(**arguments)


def test_slack_event_is_handled_once(store: HistoryStore) -> None:
    assert store.mark_event_once("Ev0123ABC") is True
    assert store.mark_event_once("Ev0123ABC") is False
    assert store.mark_event_once("Ev0123ABD") is True


def test_slack_event_once_across_threads(store: HistoryStore) -> None:
    barrier = threading.Barrier(6)
    answers: list[bool] = []

    def work() -> None:
        barrier.wait()
        answers.append(store.mark_event_once("EvRACE"))

    pool = [threading.Thread(target=work) for _ in range(6)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert sorted(answers) == [False] * 5 + [True]


def test_posted_messages_are_found_and_updated_in_place(store: HistoryStore, now: datetime) -> None:
    incident = store.record(obs(now))
    store.record_posted("C1", "1700000000.000100", "alert", incident.incident_id, engine="llama-prod")
    store.record_posted(
        "C1", "1700000000.000100", "alert-resolved", incident.incident_id, engine="llama-prod"
    )
    ref = store.find_posted(incident_id=incident.incident_id)
    assert ref is not None and (ref.channel, ref.ts, ref.kind) == (
        "C1",
        "1700000000.000100",
        "alert-resolved",
    )
    assert store.find_posted(engine="llama-prod", kind="alert-resolved") == ref
    assert store.find_posted(engine="other") is None


def test_checks_are_stored(store: HistoryStore, now: datetime) -> None:
    assert store.record_check("llama-prod", "up", 12.5, {"kv_cache": 0.4}, checked_at=now) is not None
    assert store.record_check("llama-prod", "down", None, {"error": "connection refused"}) is not None
    [uptime] = store.uptime(now - timedelta(minutes=1), now + timedelta(minutes=1))
    assert (uptime.up, uptime.down, uptime.ratio) == (1, 1, 0.5)


def test_maintenance_is_not_downtime(store: HistoryStore, now: datetime) -> None:
    """Checks the monitor marks as inside a maintenance window count neither as up nor as down."""
    for i in range(3):
        store.record_check("llama-prod", "up", 10.0, {}, checked_at=now - timedelta(seconds=i))
    for i in range(5):
        store.record_check(
            "llama-prod", "down", None, {"maintenance": True}, checked_at=now - timedelta(seconds=10 + i)
        )
    store.record_check(
        "llama-prod", "down", None, {"maintenance": False}, checked_at=now - timedelta(seconds=20)
    )
    [uptime] = store.uptime(now - timedelta(minutes=1), now + timedelta(minutes=1))
    assert (uptime.up, uptime.down, uptime.maintenance, uptime.checks) == (3, 1, 5, 9)
    assert uptime.ratio == 0.75
