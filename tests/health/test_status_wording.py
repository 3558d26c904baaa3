"""A stuck engine reads as stuck in /triage status, with the finding in words: its /health
answers 200, so the probe's own detail alone ("/health HTTP 200") read as if it were healthy."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.fleet import FAST, engine_entry
from triage_bot.health.config import parse_engines
from triage_bot.health.monitor import HealthMonitor
from triage_bot.slack.integrations import Integrations
from triage_bot.testing.fake_engines import Mode


def test_a_stuck_engine_is_shown_stuck_with_why(
    fakes, store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = fakes.add("vllm", name="llama-prod", mode=Mode.STUCK, **FAST)
    entry = engine_entry(fake)  # with the 1-token generation probe, which hangs when stuck
    (tmp_path / "engines.yaml").write_text(yaml.safe_dump({"engines": [entry]}), encoding="utf-8")
    monkeypatch.setenv("TRIAGE_ENGINES", str(tmp_path / "engines.yaml"))
    monitor = HealthMonitor(parse_engines({"engines": [entry]}), store=store)
    [status] = monitor.run_once_sync()
    assert "stuck" in {f for f in status.findings}
    [line] = Integrations(history=store).engines()[0]
    text = line.mrkdwn()
    assert text.startswith(":red_circle: *llama-prod* · vllm · stuck · checked ")
    assert "is stuck: generation probe failed" in text and "/health HTTP 200" not in text


def test_a_flat_counter_says_how_long_it_has_stood_still() -> None:
    """The minutes tell a slow prefill (seconds) from a wedged engine (minutes)."""
    from datetime import UTC, datetime, timedelta

    from triage_bot.health.config import Thresholds
    from triage_bot.health.observation import MetricsSnapshot, Observation
    from triage_bot.health.rules import EngineMemory, rule_stuck

    at = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
    snapshot = MetricsSnapshot(
        "prometheus", running=4, waiting=3, progress=100.0, progress_metric="gen_total"
    )
    mem = EngineMemory()
    mem.remember(Observation("llama-prod", "vllm", at, "ok", metrics=snapshot))
    later = Observation("llama-prod", "vllm", at + timedelta(minutes=5), "ok", metrics=snapshot)
    finding = rule_stuck(later, mem, Thresholds())
    assert finding is not None
    assert "gen_total flat since the last check 5 min ago while 3 requests wait and 4 run" in finding.message
    soon = Observation("llama-prod", "vllm", at + timedelta(seconds=30), "ok", metrics=snapshot)
    quick = rule_stuck(soon, mem, Thresholds())
    assert quick is not None and "since the last check 30 s ago" in quick.message
