"""Socket Mode end to end: the bot connects to a local WebSocket endpoint, acks envelopes, answers once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.slack_env import CHANNEL, KV_ERROR
from triage_bot.slack.app import SlackBot, build
from triage_bot.slack.config import SlackConfig
from triage_bot.slack.integrations import Integrations
from triage_bot.slack.socket_mode import socket_mode_handler
from triage_bot.testing import slack_requests as req
from triage_bot.testing.slack_standin import APP_TOKEN, BOT_TOKEN


@pytest.fixture
def socket_bot(slack, triager, history) -> Iterator[SlackBot]:
    slack.start_socket_mode()
    # no signing secret: in Socket Mode no HTTP request reaches the app
    config = SlackConfig(bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_url=slack.api_url)
    bot = build(
        config, triager=triager, history=history, integrations=Integrations(discover=False), http=False
    )
    handler = socket_mode_handler(bot, ping_interval=0.3)
    handler.connect()
    slack.wait_connected()
    yield bot
    handler.close()  # slack_sdk's client waits out its socket read timeout here (about 3 s)
    bot.close()


def test_envelopes_are_acked_and_answered_once_across_retries(slack, socket_bot: SlackBot) -> None:
    [opened] = slack.calls("apps.connections.open")
    assert opened.headers["authorization"] == f"Bearer {APP_TOKEN}"
    payload = req.event_callback(req.message(KV_ERROR, ts="1700000000.001000"), bot_user_id=slack.bot_user_id)
    first = slack.push(payload)
    assert slack.wait_acked(first) == {"envelope_id": first.data["envelope_id"]}
    retry = slack.push(payload, retry_attempt=1, retry_reason="timeout")  # Slack redelivers the same event
    assert slack.wait_acked(retry)["envelope_id"] == retry.data["envelope_id"]
    assert socket_bot.wait_idle(10)
    [post] = slack.bodies("chat.postMessage")
    assert (post["channel"], post["thread_ts"]) == (CHANNEL, "1700000000.001000")
    assert "No memory for KV cache blocks (" in post["text"]
    assert first.acked_at - first.sent_at < 1.0

    # a slash command over the same socket
    command = req.slash_command("search kv cache", response_url=slack.response_url())
    envelope = slack.push(command, "slash_commands", accepts_response_payload=True)
    assert slack.wait_acked(envelope)["envelope_id"] == envelope.data["envelope_id"]
    [response] = slack.wait_for("response_url")
    assert "Signatures matching" in response["text"]
