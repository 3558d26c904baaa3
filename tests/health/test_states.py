"""Hysteresis, flapping, maintenance and the rules, on hand-made observations (no network)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from triage_bot.health.config import Thresholds
from triage_bot.health.observation import MetricsSnapshot, Observation
from triage_bot.health.rules import EngineMemory, evaluate
from triage_bot.health.states import EngineTracker, judged_states

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
TH = Thresholds(consecutive=3, recover=2, flap_transitions=4, flap_window=10)


def obs(i: int, health: str = "ok", **metrics) -> Observation:
    m = MetricsSnapshot(source="prometheus", **metrics) if metrics else None
    return Observation(
        "e",
        "vllm",
        T0 + timedelta(seconds=30 * i),
        health,
        detail="connection refused" if health != "ok" else "",
        metrics=m,
    )


def run(tracker: EngineTracker, mem: EngineMemory, o: Observation, maintenance: bool = False):
    findings = evaluate(o, mem, tracker.thresholds)
    judged = judged_states(o, findings)
    mem.remember(o)
    return [(t.kind, t.state) for t in tracker.step(findings, judged, o.checked_at, maintenance=maintenance)]


def test_opens_after_n_bad_and_resolves_after_m_good() -> None:
    tracker, mem = EngineTracker("e", TH), EngineMemory()
    out = [run(tracker, mem, obs(i, "refused")) for i in range(3)]
    assert out == [[], [], [("open", "down")]]
    assert run(tracker, mem, obs(3)) == []
    assert run(tracker, mem, obs(4)) == [("resolve", "down")]


def test_one_bad_check_between_good_ones_opens_nothing() -> None:
    tracker, mem = EngineTracker("e", TH), EngineMemory()
    seq = ["ok", "refused", "ok", "ok", "refused", "refused", "ok"]
    assert all(run(tracker, mem, obs(i, h)) == [] for i, h in enumerate(seq))


def test_flapping_gives_one_incident_not_a_storm() -> None:
    tracker, mem = (
        EngineTracker("e", Thresholds(consecutive=1, recover=1, flap_transitions=4, flap_window=10)),
        EngineMemory(),
    )
    events = []
    for i in range(40):
        events += run(tracker, mem, obs(i, "refused" if i % 2 else "ok"))
    assert events.count(("open", "flapping")) == 1
    # before flapping was detected a few down incidents came and went; after it, none
    first_flap = events.index(("open", "flapping"))
    assert ("open", "down") not in events[first_flap:]
    # it stays down for good: flapping ends, and the down incident opens
    for i in range(40, 55):
        events += run(tracker, mem, obs(i, "refused"))
    assert ("resolve", "flapping") in events and events[-1] != ("open", "flapping")
    assert tracker.open_states() == ["down"]


def test_maintenance_holds_back_openings_but_not_counting() -> None:
    tracker, mem = EngineTracker("e", TH), EngineMemory()
    assert [run(tracker, mem, obs(i, "refused"), maintenance=True) for i in range(5)] == [[]] * 5
    assert run(tracker, mem, obs(5, "refused")) == [("open", "down")]


def test_a_state_that_cannot_be_judged_neither_opens_nor_resolves() -> None:
    tracker, mem = EngineTracker("e", TH), EngineMemory()
    for i in range(3):
        run(tracker, mem, obs(i, running=10, waiting=2, kv_usage=0.99, progress=100.0 * i))
    assert tracker.open_states() == ["kv_cache_saturated"]
    for i in range(3, 8):  # the engine goes down: KV cannot be read, so it is not "recovered"
        run(tracker, mem, obs(i, "refused"))
    assert set(tracker.open_states()) == {"kv_cache_saturated", "down"}


def test_rules_read_counters_across_two_checks() -> None:
    mem = EngineMemory()
    first = obs(
        0,
        running=4,
        waiting=3,
        progress=1000.0,
        preemptions_total=10.0,
        finished_total=100.0,
        failed_total=0.0,
    )
    assert evaluate(first, mem, TH) == {}  # one read: no rate yet
    mem.remember(first)
    second = obs(
        1,
        running=4,
        waiting=3,
        progress=1000.0,
        preemptions_total=100.0,
        finished_total=200.0,
        failed_total=30.0,
    )
    found = evaluate(second, mem, TH)
    assert set(found) == {"stuck", "preemption_storm", "request_failure_rate_high"}
    assert (
        found["preemption_storm"].message
        == "engine e preemption storm: 180 preemptions per minute (threshold 30)"
    )
    assert "30% of 100 requests failed" in found["request_failure_rate_high"].message


def test_sleeping_vllm_is_not_an_incident_and_restarts_reset_counters() -> None:
    mem = EngineMemory()
    mem.remember(obs(0, running=0, waiting=5, progress=500.0))
    assert evaluate(obs(1, running=0, waiting=50, progress=500.0, sleeping=True), mem, TH) == {}
    assert "stuck" not in evaluate(obs(1, running=3, waiting=0, progress=20.0), mem, TH)  # counter reset


def test_starvation_wins_over_a_flat_counter() -> None:
    mem = EngineMemory()
    mem.remember(obs(0, running=0, waiting=40, progress=10.0))
    assert set(evaluate(obs(1, running=0, waiting=40, progress=10.0), mem, TH)) == {"queue_starvation"}
