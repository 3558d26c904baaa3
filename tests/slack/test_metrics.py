"""`/metrics`: prometheus_client's own parser reads it, and each series moves by what a known set of
events should move it by (deltas, because the counters are process-wide)."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml

from tests.support.metrics import moved, scrape, value
from tests.support.replica import free_port
from tests.support.slack_env import KV_ERROR, Env
from triage_bot.testing import slack_requests as req
from triage_bot.testing.waiting import wait_until


def _event(env: Env, ts: str, event_id: str, retry_num: int | None = None) -> None:
    envelope = req.event_callback(
        req.message(KV_ERROR, ts=ts), event_id=event_id, bot_user_id=env.slack.bot_user_id
    )
    assert env.send.event(envelope, retry_num=retry_num).status == 200


def test_counters_move_by_the_events_the_bot_saw(env: Env) -> None:
    env.bot.watch_metrics()
    before = scrape(env.server.url)
    _event(env, "1700000100.000001", "EvMetrics1")
    _event(env, "1700000100.000001", "EvMetrics1", retry_num=1)  # Slack's retry of the same event
    _event(env, "1700000100.000002", "EvMetrics2")
    env.settle()
    env.slack.fail("chat.postMessage", status=200, error="channel_not_found")  # Slack refuses the next post
    _event(env, "1700000100.000003", "EvMetrics3")
    env.settle()
    after = scrape(env.server.url)

    assert moved(before, after, "triage_events_received_total", surface="message") == 4
    assert moved(before, after, "triage_events_acked_total", surface="message") == 4
    assert moved(before, after, "triage_events_handled_total", surface="message", outcome="done") == 3
    assert moved(before, after, "triage_events_handled_total", surface="message", outcome="duplicate") == 1
    assert moved(before, after, "triage_answers_total", tier="specific", confidence="high") == 3
    assert moved(before, after, "triage_match_seconds_count") == 3
    assert (
        moved(
            before,
            after,
            "triage_chat_api_errors_total",
            method="chat.postMessage",
            error="channel_not_found",
        )
        == 1
    )
    assert value(after, "triage_outbox_depth", where="memory") == 0
    assert value(after, "triage_outbox_depth", where="database") == 0
    assert value(after, "process_resident_memory_bytes") > 0


def test_a_gauge_whose_source_is_away_reads_nan_and_the_scrape_still_works(env: Env) -> None:
    from triage_bot import metrics

    def away() -> float:
        raise ConnectionError("the database is away")

    metrics.watch(metrics.OUTBOX_DEPTH, away, where="database")
    try:
        assert math.isnan(value(scrape(env.server.url), "triage_outbox_depth", where="database"))
    finally:
        env.bot.watch_metrics()


PROMETHEUS = shutil.which("prometheus")


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (.ci/run installs it)")
def test_a_real_prometheus_scrapes_the_bot(env: Env, tmp_path: Path) -> None:
    target = env.server.url.removeprefix("http://")
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [{"job_name": "triage-bot", "static_configs": [{"targets": [target]}]}],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    assert PROMETHEUS is not None
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    api = f"http://127.0.0.1:{port}/api/v1"

    def query(expr: str) -> list[dict]:
        try:
            response = httpx.get(api + "/query", params={"query": expr}, timeout=2)
        except httpx.HTTPError:
            return []
        return response.json()["data"]["result"] if response.status_code == 200 else []

    try:
        env.bot.watch_metrics()
        _event(env, "1700000200.000001", "EvPrometheus1")
        env.settle()
        assert wait_until(lambda: [r["value"][1] for r in query('up{job="triage-bot"}')] == ["1"], 60)
        received = 'triage_events_received_total{job="triage-bot",surface="message"}'
        assert wait_until(lambda: bool(query(received)) and float(query(received)[0]["value"][1]) >= 1, 30)
        [health] = httpx.get(api + "/targets", timeout=5).json()["data"]["activeTargets"]
        assert health["health"] == "up" and health["lastError"] == ""
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0]
    assert "level=error" not in output, output[-2000:]
