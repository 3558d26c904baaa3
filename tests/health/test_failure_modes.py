"""Every failure mode of every fake engine ends in the right state, with the scheduler running.

One fleet holds each engine kind in each mode; the real scheduler (APScheduler, local leader)
runs the real health job against it with short intervals, and the test then reads the incidents
the monitor opened, the alerts it posted and the checks it recorded.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from tests.support.fleet import FAST, engine_entry
from triage_bot.health.alerts import RecordingNotifier
from triage_bot.health.config import parse_engines
from triage_bot.health.monitor import HealthMonitor
from triage_bot.scheduler import LocalCoordinator, SchedulerSettings, TriageScheduler, default_jobs
from triage_bot.testing.fake_engines import Mode

# mode -> expected open states after a few checks, per kind (None: same for every kind)
EXPECTED: dict[Mode, dict[str, set[str]] | set[str]] = {
    Mode.HEALTHY: set(),
    Mode.REFUSED: {"down"},
    Mode.HANG: {"down"},
    Mode.HTTP_503: {"down"},
    Mode.SLOW_DRIP: {"down"},
    Mode.GARBAGE: {"metrics_missing"},
    Mode.HUGE_BODY: {"metrics_missing"},
    Mode.METRICS_MISSING: {"metrics_missing"},
    Mode.KV_SATURATED: {"kv_cache_saturated"},
    Mode.STARVATION: {"queue_starvation"},
    Mode.STUCK: {"stuck"},
    Mode.FLAPPING: {"flapping"},
    # Triton exposes no preemption metric (engine_endpoints.md §5): nothing to see
    Mode.PREEMPTION_STORM: {
        "vllm": {"preemption_storm"},
        "sglang": {"preemption_storm"},
        "trtllm": {"preemption_storm"},
        "triton": set(),
    },
    Mode.FAILURES: {"request_failure_rate_high"},
}
KINDS = ("vllm", "sglang", "trtllm", "triton")
# Only these modes are about the deadline (a hung generation probe is how "stuck" shows). Every other engine answers, so it gets a deadline a
# loaded machine cannot miss: a good answer that timed out would read as a bad check, and two in a
# row would open "down" on an engine that is only flapping (seen on a loaded 2-core machine).
TIMEOUT_MODES = {Mode.HANG: 1.0, Mode.SLOW_DRIP: 1.0, Mode.STUCK: 1.0}
ANSWERING_TIMEOUT = 15.0


def expected(mode: Mode, kind: str) -> set[str]:
    value = EXPECTED[mode]
    return value[kind] if isinstance(value, dict) else value


@pytest.fixture
def fleet(fakes):
    entries, modes = [], {}
    for kind in KINDS:
        for mode in Mode:
            options = dict(FAST)
            extra = {}
            if kind == "trtllm" and mode is Mode.FAILURES:
                options["perf_metrics"] = True  # the JSON stats carry no failures; the Prometheus page does
            fake = fakes.add(kind, name=f"{kind}-{mode.value}", mode=mode, **options)
            if kind == "trtllm" and mode is Mode.FAILURES:
                extra["metrics_url"] = fake.base_url + "/prometheus/metrics"
            entry = engine_entry(fake, timeout=TIMEOUT_MODES.get(mode, ANSWERING_TIMEOUT), **extra)
            if kind == "sglang" and mode is not Mode.STUCK:
                # SGLang's stuck signal is a 503 that took its health timeout: only the stuck engine
                # keeps the short one, so a loaded machine cannot make an instant 503 look stuck
                entry["thresholds"] = {**entry["thresholds"], "sglang_health_s": 30.0}
            entries.append(entry)
            modes[fake.name] = (kind, mode)
    return parse_engines({"engines": entries}), modes, fakes


def test_every_mode_ends_in_the_right_state_while_the_scheduler_runs(fleet, store) -> None:
    config, modes, fakes = fleet
    notifier = RecordingNotifier()
    monitor = HealthMonitor(config, store=store, notifier=notifier)
    settings = SchedulerSettings(check_interval_s=2)
    scheduler = TriageScheduler(
        LocalCoordinator(None, poll_s=0.2),
        default_jobs(settings, check=monitor.run_once_sync, digest=None, prune=None),
    )
    scheduler.start()

    def settled() -> bool:
        # states open after N checks and flapping needs K flips: on a busy machine a slot can run
        # late, so wait (bounded) until every engine has had the chance to reach its state
        return monitor.passes >= 7 and all(
            set(monitor.trackers[name].open_states()) == expected(mode, kind)
            for name, (kind, mode) in modes.items()
        )

    try:
        deadline = time.monotonic() + 60
        while not settled() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        scheduler.shutdown()
        monitor.close()
    assert monitor.passes >= 7, f"the scheduler ran only {monitor.passes} passes"
    assert scheduler.errors == 0
    runs = [slot for job, slot in scheduler.runs if job == "health_check"]
    assert len(runs) == len(set(runs)), "a slot ran twice"

    wrong = {}
    for name, (kind, mode) in modes.items():
        got = set(monitor.trackers[name].open_states())
        if got != expected(mode, kind):
            wrong[name] = (sorted(got), sorted(expected(mode, kind)), monitor.trackers[name].current)
    assert not wrong, wrong

    # one alert per incident, never a storm: a flapping engine posted exactly one message
    posts = [(a.engine, a.state) for kind, _, a in notifier.calls if kind == "post"]
    assert len(posts) == len(set(posts))
    for kind in KINDS:
        assert [s for e, s in posts if e == f"{kind}-flapping"] == ["flapping"]
    # the bot only read: GET everywhere, POST only for vLLM's 1-token completion
    for fake in fakes.engines:
        for method, path in fake.requests:
            assert method == "GET" or (
                fake.kind == "vllm" and method == "POST" and path == "/v1/completions"
            ), (fake.name, method, path)
    # every pass was recorded for uptime, and incidents carry the health signatures
    numbers = store.uptime(store.clock().replace(year=2000), store.clock().replace(year=2100))
    assert {u.engine for u in numbers} == set(modes)
    assert all(u.checks >= 7 for u in numbers)
    opened = store.history(limit=1000)
    assert {i.signature_id for i in opened} >= {
        "health.engine_down",
        "health.flapping",
        "health.stuck_generation",
    }
    assert all(i.source == "health" and i.engine in KINDS for i in opened)


def test_an_engine_recovers_and_its_alert_is_resolved_in_place(fakes, store) -> None:
    fake = fakes.add("vllm", name="llama-prod", mode=Mode.REFUSED, **FAST)
    config = parse_engines({"engines": [engine_entry(fake)]})
    notifier = RecordingNotifier()
    monitor = HealthMonitor(config, store=store, notifier=notifier)
    try:
        for _ in range(3):
            monitor.run_once_sync()
        assert monitor.trackers["llama-prod"].open_states() == ["down"]
        fake.set_mode(Mode.HEALTHY)
        for _ in range(3):
            monitor.run_once_sync()
    finally:
        monitor.close()
    assert monitor.trackers["llama-prod"].open_states() == []
    kinds = [(k, ref.ts) for k, ref, _ in notifier.calls]
    assert [k for k, _ in kinds] == ["post", "resolve"]
    assert kinds[0][1] == kinds[1][1], "the resolution edits the original message"
    incident = store.history(limit=5)[0]
    assert incident.signature_id == "health.engine_down" and incident.status == "resolved"
    assert incident.target == "llama-prod" and incident.engine == "vllm"
    assert store.find_posted(incident_id=incident.id, kind="health_alert") is not None


def test_mutes_and_maintenance_hold_back_alerts(fakes, store) -> None:
    down = fakes.add("vllm", name="muted-one", mode=Mode.REFUSED, **FAST)
    maint = fakes.add("sglang", name="in-maintenance", mode=Mode.REFUSED, **FAST)
    config = parse_engines(
        {
            "engines": [engine_entry(down), engine_entry(maint)],
            "maintenance": [
                {
                    "engines": ["in-maintenance"],
                    "start": "2000-01-01T00:00:00Z",
                    "end": "2100-01-01T00:00:00Z",
                }
            ],
        }
    )
    store.mute(signature_id="health.engine_down", engine="muted-one", duration=timedelta(hours=1), by="U1")
    notifier = RecordingNotifier()
    monitor = HealthMonitor(config, store=store, notifier=notifier)
    try:
        for _ in range(3):
            monitor.run_once_sync()
    finally:
        monitor.close()
    assert notifier.calls == []
    assert monitor.trackers["in-maintenance"].open_states() == []  # held back by the window
    assert monitor.trackers["muted-one"].open_states() == ["down"]  # recorded, just not posted
    assert [i.status for i in store.history(limit=5)] == ["muted"]
