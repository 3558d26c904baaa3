"""`/metrics`: prometheus_client's own parser reads it, and each series moves by what a known set of
events should move it by (deltas, because the counters are process-wide)."""

from __future__ import annotations

import math

from tests.slack.conftest import KV_ERROR, Env
from tests.support.metrics import moved, scrape, value
from triage_bot.testing import slack_requests as req


def _event(env: Env, ts: str, event_id: str, retry_num: int | None = None) -> None:
    envelope = req.event_callback(req.message(KV_ERROR, ts=ts), event_id=event_id, bot_user_id=env.slack.bot_user_id)
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
    assert moved(before, after, "triage_chat_api_errors_total", method="chat.postMessage",
                 error="channel_not_found") == 1
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
