"""Reads: history filters, "seen before?", the digest's numbers, uptime, and retention."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from triage_bot.history import HistoryStore, Sighting
from triage_bot.history.models import EngineCheck, Incident, Occurrence, SlackEvent


def record(store: HistoryStore, sig: str, engine: str, target: str, at: datetime, **kw: object):
    return store.record(Sighting(sig, engine, target, seen_at=at, **kw))  # type: ignore[arg-type]


@pytest.fixture
def populated(store: HistoryStore, now: datetime) -> dict[str, int]:
    """A small week: vLLM KV-cache twice (resolved, then recurring), SGLang OOM, an old TRT-LLM one."""
    ids = {}
    kv1 = record(store, "vllm.kv_cache_no_memory", "vllm", "llama-prod", now - timedelta(days=3))
    record(
        store, "vllm.kv_cache_no_memory", "vllm", "llama-prod", now - timedelta(days=3) + timedelta(hours=1)
    )
    store.acknowledge(kv1.incident_id, "U1", at=now - timedelta(days=3) + timedelta(minutes=10))
    store.resolve(
        kv1.incident_id, "U1", "set --gpu-memory-utilization 0.95", at=now - timedelta(days=3, hours=-2)
    )
    kv2 = record(store, "vllm.kv_cache_no_memory", "vllm", "llama-prod", now - timedelta(days=1))
    oom = record(store, "generic.cuda_oom", "sglang", "qwen-prod", now - timedelta(hours=2), severity="high")
    store.acknowledge(oom.incident_id, "U2", at=now - timedelta(hours=1, minutes=30))
    old = record(store, "trtllm.engine_build_mismatch", "trtllm", "C0CHAN", now - timedelta(days=20))
    ids.update(kv1=kv1.incident_id, kv2=kv2.incident_id, oom=oom.incident_id, old=old.incident_id)
    return ids


def test_history_filters_by_engine_signature_status_and_days(
    store: HistoryStore, populated: dict[str, int]
) -> None:
    assert [i.id for i in store.history()] == [populated[k] for k in ("oom", "kv2", "kv1", "old")]
    assert [i.id for i in store.history(engine="vllm")] == [populated["kv2"], populated["kv1"]]
    assert [i.id for i in store.history(signature_id="generic.cuda_oom")] == [populated["oom"]]
    assert [i.id for i in store.history(days=2)] == [populated["oom"], populated["kv2"]]
    assert [i.id for i in store.history(days=30, engine="trtllm")] == [populated["old"]]
    assert [i.id for i in store.history(status="resolved")] == [populated["kv1"]]
    assert [i.id for i in store.history(target="qwen-prod")] == [populated["oom"]]
    assert len(store.history(limit=2)) == 2
    assert store.history(engine="nope") == []


def test_history_json_is_plain(store: HistoryStore, populated: dict[str, int]) -> None:
    row = store.history(signature_id="generic.cuda_oom")[0].to_json()
    assert row["engine"] == "sglang" and row["severity"] == "high"
    assert isinstance(row["first_seen"], str) and row["first_seen"].endswith("+00:00")


def test_seen_before_reports_count_last_time_and_resolution(
    store: HistoryStore, populated: dict[str, int], now: datetime
) -> None:
    seen = store.seen_before(
        "vllm.kv_cache_no_memory", "vllm", "llama-prod", exclude_incident_id=populated["kv2"]
    )
    assert seen is not None
    assert (seen.incidents, seen.occurrences) == (1, 2)
    assert seen.last_incident_id == populated["kv1"] and seen.last_status == "resolved"
    assert seen.last_resolved_by == "U1" and seen.last_resolution == "set --gpu-memory-utilization 0.95"
    everything = store.seen_before("vllm.kv_cache_no_memory", "vllm")
    assert everything is not None and everything.incidents == 2 and everything.occurrences == 3
    assert everything.last_seen == now - timedelta(days=1)
    assert store.seen_before("generic.cuda_oom", "vllm") is None
    assert store.seen_before("generic.cuda_oom", "sglang", exclude_incident_id=populated["oom"]) is None


def test_digest_numbers_for_a_week(store: HistoryStore, populated: dict[str, int], now: datetime) -> None:
    for minutes, state in enumerate(["up"] * 7 + ["degraded", "down", "unknown"]):
        store.record_check("llama-prod", state, 20.0, checked_at=now - timedelta(hours=5, minutes=minutes))
    store.record_check("qwen-prod", "up", 30.0, checked_at=now - timedelta(hours=1))
    store.record_check("llama-prod", "down", checked_at=now - timedelta(days=9))  # before the period

    d = store.digest_numbers(now - timedelta(days=7), now + timedelta(minutes=1))
    assert (d.incidents, d.new, d.recurring, d.occurrences, d.still_open) == (3, 2, 1, 4, 2)
    by_engine = {g.engine: (g.incidents, g.new, g.recurring, g.occurrences) for g in d.by_engine}
    assert by_engine == {"vllm": (2, 1, 1, 3), "sglang": (1, 1, 0, 1)}
    by_sig = {(g.engine, g.signature_id): g.incidents for g in d.by_signature}
    assert by_sig == {("vllm", "vllm.kv_cache_no_memory"): 2, ("sglang", "generic.cuda_oom"): 1}
    assert [g.signature_id for g in d.top_recurring] == ["vllm.kv_cache_no_memory"]
    assert d.mtta_samples == 2 and d.mtta_seconds == pytest.approx((600 + 1800) / 2)
    assert d.mttr_samples == 1 and d.mttr_seconds == pytest.approx(7200)
    uptime = {u.engine: u for u in d.uptime}
    assert uptime["llama-prod"].checks == 10 and uptime["llama-prod"].ratio == pytest.approx(8 / 9)
    assert uptime["qwen-prod"].ratio == 1.0
    json = d.to_json()
    assert json["by_engine"][0]["engine"] == "vllm" and isinstance(json["start"], str)


def test_digest_of_an_empty_period(store: HistoryStore, populated: dict[str, int], now: datetime) -> None:
    d = store.digest_numbers(now + timedelta(days=1), now + timedelta(days=8))
    assert (d.incidents, d.occurrences, d.mtta_seconds, d.mttr_seconds, d.uptime) == (0, 0, None, None, [])


def test_prune_drops_old_details_and_keeps_incidents(
    store: HistoryStore, engine: Engine, populated: dict[str, int], now: datetime
) -> None:
    store.record_check("llama-prod", "up", checked_at=now - timedelta(days=40))
    store.record_check("llama-prod", "up", checked_at=now - timedelta(days=1))
    store.mark_event_once("EvOLD", at=now - timedelta(days=8))
    store.mark_event_once("EvNEW", at=now - timedelta(hours=1))
    result = store.prune(days=10)
    assert (result.occurrences, result.engine_checks, result.slack_events) == (1, 1, 1)
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(Incident)).scalar_one() == 4
        assert connection.execute(select(func.count()).select_from(Occurrence)).scalar_one() == 4
        assert connection.execute(select(func.count()).select_from(EngineCheck)).scalar_one() == 1
        assert connection.execute(select(SlackEvent.event_id)).scalars().all() == ["EvNEW"]
    old = store.get_incident(populated["old"])
    assert old is not None and old.occurrence_count == 1  # the summary survives its occurrences
    assert store.seen_before("trtllm.engine_build_mismatch", "trtllm") is not None


def test_prune_works_in_batches(store: HistoryStore, engine: Engine, now: datetime) -> None:
    for i in range(25):
        store.record_check("e", "up", checked_at=now - timedelta(days=30, minutes=i))
    from triage_bot.history import retention

    result = retention.prune(lambda fn: store._run(lambda s, _: fn(s), {}), 10, now=now, batch=4)
    assert result.engine_checks == 25


def test_wrong_match_reports_by_signature_with_what_people_chose(
    store: HistoryStore, populated: dict[str, int], now: datetime
) -> None:
    kv, oom = populated["kv2"], populated["oom"]
    store.record_feedback(kv, "U1", "wrong_match", correct_signature_id="vllm.max_model_len_exceeds_kv_cache")
    store.record_feedback(kv, "U2", "wrong_match", correct_signature_id=None)  # none of the known ones
    store.record_feedback(kv, "U3", "wrong_match", correct_signature_id="vllm.max_model_len_exceeds_kv_cache")
    store.record_feedback(oom, "U1", "wrong_match", correct_signature_id="sglang.prefill_out_of_memory")
    store.record_feedback(oom, "U2", "helpful")
    found = store.wrong_matches(now - timedelta(days=7), now + timedelta(minutes=1))
    assert [(w.signature_id, w.reports, w.chosen) for w in found] == [
        ("vllm.kv_cache_no_memory", 3, {"vllm.max_model_len_exceeds_kv_cache": 2, "none": 1}),
        ("generic.cuda_oom", 1, {"sglang.prefill_out_of_memory": 1}),
    ]
    assert store.wrong_matches(now + timedelta(minutes=1), now + timedelta(days=1)) == []

    records = store.feedback_records(now - timedelta(days=1))
    assert [(r.incident_id, r.signature_id, r.correct_signature_id, r.user_id) for r in records] == [
        (kv, "vllm.kv_cache_no_memory", "vllm.max_model_len_exceeds_kv_cache", "U1"),
        (kv, "vllm.kv_cache_no_memory", None, "U2"),
        (kv, "vllm.kv_cache_no_memory", "vllm.max_model_len_exceeds_kv_cache", "U3"),
        (oom, "generic.cuda_oom", "sglang.prefill_out_of_memory", "U1"),
    ]
    assert records[0].engine == "vllm" and records[0].kind == "wrong_match"
    every = store.feedback_records(now - timedelta(days=1), ("wrong_match", "helpful"))
    assert [r.kind for r in every].count("helpful") == 1
