"""Pasted errors in channels the bot is in: answered in the thread only when the bot is sure.

The passive rule: a channel message gets a reply only when its answer is `passive` (a known
failure, high confidence, a real failure signal); everything else stays silent, including files
the bot cannot read. A repeat of an open incident gets a one-line reply instead of the whole
answer again. A direct message to the bot is a question, so it is always answered.

Ignored: the bot's own messages (bolt drops them), other bots' messages (unless
TRIAGE_REPLY_TO_BOTS), edits, deletions and other message subtypes, and messages that mention
the bot (the `app_mention` listener answers those; both events arrive for one message).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from triage_bot.slack.listeners import durable, post_answer
from triage_bot.slack.text import mentions_of

if TYPE_CHECKING:
    from triage_bot.slack.app import Deps

log = logging.getLogger(__name__)

EVENTS = ("message",)  # message.channels, message.groups, message.im, message.mpim in the manifest
NEW_MESSAGE_SUBTYPES = (None, "bot_message", "thread_broadcast", "file_share")


def register(app: App, deps: Deps) -> None:
    def work(deps: Deps, body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        handle_message(deps, body, body.get("event") or {}, client, context)

    accept, on_message = durable(deps, "message", work)

    def ignore_other_subtypes(ack: Any) -> None:
        """message_changed, message_deleted, channel_join…: acked (else Slack retries a 404), not answered."""
        ack()

    # app.message() would skip a file with no text, and runs a regex over every message; match the
    # subtypes that are new messages directly instead
    app.event({"type": "message", "subtype": NEW_MESSAGE_SUBTYPES})(ack=accept, lazy=[on_message])
    app.event("message")(ignore_other_subtypes)
    deps.surfaces.events.update(EVENTS)


def handle_message(
    deps: Deps, body: dict[str, Any], event: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    config = deps.config
    if (event.get("bot_id") or event.get("subtype") == "bot_message") and not config.reply_to_bots:
        return
    if event.get("user") and event.get("user") == context.bot_user_id:
        return
    explicit = event.get("channel_type") == "im"  # a direct message is a question to the bot
    bot_user = context.bot_user_id or ""
    if not explicit and bot_user and bot_user in mentions_of(event.get("text", "")):
        return  # app_mention answers it
    event_id = body.get("event_id")
    channel = event.get("channel") or ""
    thread_ts = event.get("thread_ts") or event.get("ts")
    user = event.get("user")
    text, problems = deps.job.gather(client, event.get("text", ""), event.get("files"))
    if not text.strip():
        if explicit and problems:
            _post_problems(deps, client, channel, thread_ts, problems)
        return
    triaged = deps.job.run(
        text,
        channel=channel,
        thread_ts=thread_ts,
        user=user,
        key=event_id,
        record=lambda answer: explicit or answer.passive,  # a channel records what it answers
    )
    if not explicit and not triaged.answer.passive:
        return  # silence: not a known failure the bot is sure of
    triaged.notes.extend(problems)
    if not explicit and triaged.muted_until:
        return  # muted: recorded, not posted
    match = triaged.answer.match
    post_answer(
        deps,
        client,
        channel,
        thread_ts,
        triaged.message(short_repeat=not explicit),
        triaged.incident_id,
        match.engine if match else None,
        triaged.full_text,
        key=event_id,
    )


def _post_problems(
    deps: Deps, client: WebClient, channel: str, thread_ts: str | None, problems: list[str]
) -> None:
    from triage_bot.slack.blocks import text_message

    message = text_message("I could not read the attachment.", "\n".join(problems))
    deps.delivery.post(channel, message.kwargs(), thread_ts=thread_ts, client=client)
