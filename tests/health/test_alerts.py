"""Alerts through slack_sdk against the local Slack stand-in: one message, edited in place, resolved in its thread."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from slack_sdk import WebClient

from tests.support.fleet import FAST, engine_entry
from triage_bot.blockkit import escape
from triage_bot.health.alerts import Alert
from triage_bot.health.config import parse_engines
from triage_bot.health.monitor import HealthMonitor
from triage_bot.slack.alerts import alert_blocks
from triage_bot.slack.config import SlackConfig
from triage_bot.slack.delivery import Delivery
from triage_bot.slack.outputs import SlackNotifier
from triage_bot.testing.fake_engines import Mode
from triage_bot.testing.slack_standin import BOT_TOKEN, SlackStandin


def _notifier(slack: SlackStandin) -> SlackNotifier:
    config = SlackConfig(
        bot_token=BOT_TOKEN,
        api_url=slack.api_url,
        rate_limit_retries=0,
        server_error_retries=0,
        channel_pace_s=0.0,
    )
    return SlackNotifier(
        Delivery(config, None, WebClient(token=BOT_TOKEN, base_url=slack.api_url)), "C0ALERTS"
    )


def test_alert_lifecycle_through_the_web_api(fakes, store) -> None:
    fake = fakes.add("vllm", name="llama-prod", mode=Mode.KV_SATURATED, **FAST)
    config = parse_engines({"engines": [engine_entry(fake, model="meta-llama/Llama-3.1-8B-Instruct")]})
    with SlackStandin() as slack:
        notifier = _notifier(slack)
        monitor = HealthMonitor(config, store=store, notifier=notifier)
        try:
            for _ in range(2):
                monitor.run_once_sync()
            posted = slack.wait_for("chat.postMessage", 1)
            assert len(posted) == 1 and posted[0]["channel"] == "C0ALERTS"
            assert "KV cache is saturated: 98% used" in posted[0]["text"]
            blocks_text = str(posted[0]["blocks"])
            assert "health.kv_cache_saturated" in blocks_text  # the signature id is always shown
            assert "--gpu-memory-utilization" in blocks_text  # the vLLM recovery, not another engine's
            assert "meta-llama/Llama-3.1-8B-Instruct" in blocks_text
            fake.set_mode(Mode.HEALTHY)
            for _ in range(2):
                monitor.run_once_sync()
        finally:
            monitor.close()
        updates = slack.bodies("chat.update")
        posts = slack.bodies("chat.postMessage")
    ts = posted[0].get("ts", None)
    assert len(updates) == 1 and "Resolved" in updates[0]["text"]
    assert len(posts) == 2, "the alert, then the resolution in its thread"
    assert posts[1]["thread_ts"] == updates[0]["ts"]
    assert ts is None or updates[0]["ts"] == ts


def test_alert_text_is_escaped_and_within_limits() -> None:
    opened = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
    alert = Alert(
        engine="evil",
        kind="vllm",
        state="down",
        signature_id="health.engine_down",
        title="Engine is down",
        message="engine evil is down: /health HTTP 503 <!channel> <https://x|click>",
        severity="critical",
        opened_at=opened,
        recovery="$ vllm serve <model>\n" + "x" * 5000,
        faq="f" * 2500,
    )
    for a in (alert, alert.resolved(opened + timedelta(minutes=7), "healthy again")):
        blocks = alert_blocks(a)
        text = str(blocks)
        assert "<!channel>" not in text and "&lt;!channel&gt;" in text
        for block in blocks:
            if block["type"] == "section":
                assert len(block["text"]["text"]) <= 3000
            if block["type"] == "context":
                assert len(block["elements"]) <= 10
    assert escape("a<b>&c") == "a&lt;b&gt;&amp;c"


def test_a_failed_post_is_retried_while_the_incident_stays_open(fakes, store) -> None:
    fake = fakes.add("sglang", name="qwen", mode=Mode.HTTP_503, **FAST)
    config = parse_engines({"engines": [engine_entry(fake)]})
    with SlackStandin() as slack:
        slack.fail("chat.postMessage", status=200, times=1, error="channel_not_found")
        notifier = _notifier(slack)
        monitor = HealthMonitor(config, store=store, notifier=notifier)
        try:
            for _ in range(3):
                monitor.run_once_sync()
        finally:
            monitor.close()
        posts = slack.bodies("chat.postMessage")
    assert len(posts) == 1, "posted exactly once, on the check after the failure"


def test_a_resolution_slack_refuses_for_a_while_lands_from_the_outbox(fakes, store) -> None:
    """The engine recovers while Slack answers 500: the edit and the thread reply wait, then land."""
    from datetime import UTC, datetime, timedelta

    from tests.support.schema import create_every_table
    from triage_bot.slack.delivery import wait_for_outbox
    from triage_bot.slack.outbox import SlackStore

    fake = fakes.add("vllm", name="llama-prod", mode=Mode.REFUSED, **FAST)
    config = parse_engines({"engines": [engine_entry(fake)]})
    outbox = SlackStore(store.session_factory)
    create_every_table(store.session_factory.kw["bind"])  # as `db upgrade` would
    with SlackStandin() as slack:
        slack_config = SlackConfig(
            bot_token=BOT_TOKEN,
            api_url=slack.api_url,
            rate_limit_retries=0,
            server_error_retries=0,
            channel_pace_s=0.0,
        )
        delivery = Delivery(slack_config, outbox, WebClient(token=BOT_TOKEN, base_url=slack.api_url))
        monitor = HealthMonitor(config, store=store, notifier=SlackNotifier(delivery, "C0ALERTS"))
        try:
            for _ in range(2):
                monitor.run_once_sync()
            slack.wait_for("chat.postMessage", 1)
            [alert] = slack.messages["C0ALERTS"]
            slack.fail("chat.update", status=500, times=3)
            slack.fail("chat.postMessage", status=500, times=3)
            fake.set_mode(Mode.HEALTHY)
            for _ in range(2):
                monitor.run_once_sync()
        finally:
            monitor.close()
        assert [r["method"] for r in outbox.rows()] == ["chat.update", "chat.postMessage"]
        for _ in range(3):  # Slack is back after its failures: the sweeper delivers both, once
            wait_for_outbox(delivery, timeout=5, now=datetime.now(UTC) + timedelta(hours=2))
        [update] = slack.wait_for("chat.update", 1)
        replies = [p for p in slack.wait_for("chat.postMessage", 2) if p.get("thread_ts")]
    assert update["ts"] == alert["ts"] and "Resolved" in update["text"]
    assert len(replies) == 1 and replies[0]["thread_ts"] == alert["ts"]
    assert {r["state"] for r in outbox.rows()} == {"sent"}


def test_an_alerts_commands_use_the_engines_configured_url(fakes, store) -> None:
    from triage_bot.health.alerts import RecordingNotifier

    fake = fakes.add("vllm", name="llama-prod", mode=Mode.REFUSED, **FAST)
    notifier = RecordingNotifier()
    monitor = HealthMonitor(parse_engines({"engines": [engine_entry(fake)]}), store=store, notifier=notifier)
    try:
        for _ in range(2):
            monitor.run_once_sync()
    finally:
        monitor.close()
    [(kind, _ref, alert)] = notifier.calls
    assert kind == "post" and alert.state == "down"
    assert f"{fake.base_url}/health" in alert.recovery and "<host>" not in alert.recovery
