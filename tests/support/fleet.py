"""Fake-engine fleets for the health, scheduler and CLI tests: quick fake options, engines.yaml entries."""

from __future__ import annotations

from typing import Any

from triage_bot.health.config import EnginesFile, parse_engines
from triage_bot.testing.fake_engines import FakeEngine

# quick fakes: real status codes and bodies, shorter waits
FAST = {"sglang_health_delay": 0.02, "sglang_health_timeout": 0.6, "stats_wait": 0.02, "drip_interval": 0.05}
FAST_THRESHOLDS = {
    "consecutive": 2,
    "recover": 2,
    "flap_transitions": 3,
    "flap_window": 8,
    "sglang_health_s": 0.6,
}


def engine_entry(fake: FakeEngine, *, timeout: float = 1.0, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": fake.name,
        "kind": fake.kind,
        "base_url": fake.base_url,
        "timeout_s": timeout,
        "thresholds": dict(FAST_THRESHOLDS),
    }
    if fake.kind == "triton":
        entry["metrics_url"] = fake.base_url + "/metrics"
    if fake.kind in ("vllm", "trtllm"):
        entry["generate_probe"] = True
    entry.update(extra)
    return entry


def config_for(fakes_list: list[FakeEngine], **poller: Any) -> EnginesFile:
    return parse_engines(
        {"engines": [engine_entry(f) for f in fakes_list], **({"poller": poller} if poller else {})}
    )
