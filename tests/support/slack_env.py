"""The Slack test environment: the real app on waitress against the stand-in, and what tests send it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tests.support.schema import create_every_table
from triage_bot.core import Triager
from triage_bot.history import HistoryStore
from triage_bot.slack.app import SlackBot, build
from triage_bot.slack.config import SlackConfig
from triage_bot.slack.http import HttpServer
from triage_bot.slack.integrations import Integrations
from triage_bot.testing import slack_requests as req
from triage_bot.testing.slack_standin import BOT_TOKEN, SIGNING_SECRET, SlackStandin

ADMIN = "U0ADMIN"
ALICE = "U0ALICE"
CHANNEL = "C0INCIDENT"
KV_ERROR = "ValueError: No available memory for the cache blocks. Try increasing gpu_memory_utilization."


def make_history(path: Path) -> HistoryStore:
    store = HistoryStore.from_url(f"sqlite:///{path}")
    create_every_table(store.session_factory.kw["bind"])
    return store


@dataclasses.dataclass
class Env:
    slack: SlackStandin
    bot: SlackBot
    server: HttpServer
    send: req.SignedSender
    history: HistoryStore

    def settle(self, timeout: float = 15.0) -> None:
        assert self.bot.wait_idle(timeout), "the app's work did not finish"

    def posts(self) -> list[dict[str, Any]]:
        return self.slack.bodies("chat.postMessage")

    def responses(self) -> list[dict[str, Any]]:
        return self.slack.bodies("response_url")

    def event(self, event: dict[str, Any], **kwargs: Any) -> req.Sent:
        sent = self.send.event(req.event_callback(event, bot_user_id=self.slack.bot_user_id), **kwargs)
        assert sent.status == 200, sent.body
        return sent

    def command(self, text: str, user: str = ALICE, channel: str = CHANNEL) -> req.Sent:
        sent = self.send.command(
            req.slash_command(text, response_url=self.slack.response_url(), user=user, channel=channel)
        )
        assert sent.status == 200, sent.body
        return sent

    def click(self, action_id: str, value: str, **kwargs: Any) -> req.Sent:
        kwargs.setdefault("response_url", self.slack.response_url("click"))
        sent = self.send.interactive(req.block_action(action_id, value, **kwargs))
        assert sent.status == 200, sent.body
        return sent


def start_env(
    slack: SlackStandin,
    triager: Triager,
    history: HistoryStore,
    integrations: Integrations | None = None,
    **overrides: Any,
) -> Env:
    # no channel pacing unless a test asks for it: bursts to one channel would wait in the outbox
    settings: dict[str, Any] = {
        "admins": frozenset({ADMIN}),
        "rate_limit_retries": 2,
        "channel_pace_s": 0.0,
    } | overrides
    config = SlackConfig(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_url=slack.api_url, **settings
    )
    bot = build(
        config, triager=triager, history=history, integrations=integrations or Integrations(discover=False)
    )
    server = HttpServer(bot, host="127.0.0.1", port=0, threads=8).start()
    return Env(slack, bot, server, req.SignedSender(server.url + "/slack/events", SIGNING_SECRET), history)


def stop_env(env: Env) -> None:
    env.send.close()
    env.server.stop()
    env.bot.close()
