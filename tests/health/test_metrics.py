"""Engine checks in the bot's metrics: one result per check, labelled by engine and state."""

from __future__ import annotations

from tests.support.fleet import FAST, engine_entry
from tests.support.metrics import moved, scrape
from triage_bot.health.config import parse_engines
from triage_bot.health.monitor import HealthMonitor
from triage_bot.testing.fake_engines import Mode


def test_probe_results_and_durations_are_counted_per_engine(fakes, store) -> None:
    fake = fakes.add("vllm", name="metrics-vllm", mode=Mode.HEALTHY, **FAST)
    monitor = HealthMonitor(parse_engines({"engines": [engine_entry(fake)]}), store=store)
    before = scrape()
    try:
        monitor.run_once_sync()
        fake.set_mode(Mode.REFUSED)
        monitor.run_once_sync()
    finally:
        monitor.close()
    after = scrape()
    found = {
        dict(labels)["state"]: after[(name, labels)] - before.get((name, labels), 0.0)
        for (name, labels) in after
        if name == "triage_engine_probes_total" and dict(labels).get("engine") == "metrics-vllm"
    }
    assert found == {"up": 1, "down": 1}, found
    assert moved(before, after, "triage_engine_probe_seconds_count", engine="metrics-vllm") == 2
