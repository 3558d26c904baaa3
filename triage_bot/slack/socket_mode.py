"""Socket Mode: the bot connects out to Slack over a WebSocket (no public URL needed).

bolt's built-in handler (no extra dependency) reuses `app.client`, so `apps.connections.open`
goes to SLACK_API_URL like every other call, with the same retry handlers. Since bolt 1.29 the
handler copies an envelope's `retry_attempt` into the `x-slack-retry-num` header, so retries are
seen the same way in both modes; duplicates are stopped by the event id in the history either way.
"""

from __future__ import annotations

import logging

from slack_bolt.adapter.socket_mode import SocketModeHandler

from triage_bot.slack.app import SlackBot

log = logging.getLogger(__name__)


def socket_mode_handler(bot: SlackBot, *, ping_interval: float = 10.0) -> SocketModeHandler:
    return SocketModeHandler(
        bot.app,
        app_token=bot.deps.config.app_token,
        ping_interval=ping_interval,
        concurrency=max(4, bot.deps.config.workers),
    )
