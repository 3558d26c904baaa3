"""Message shortcut "Triage this message": any message, answered in its thread.

The person chose the message, so the answer is explicit (never silent). If the bot is not in that
channel it cannot post in the thread; the answer then goes to the person alone, with the hint to
invite the bot.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import App
from slack_sdk import WebClient

from triage_bot.slack.blocks import text_message
from triage_bot.slack.delivery import Failure
from triage_bot.slack.listeners import durable, once_key, post_answer

if TYPE_CHECKING:
    from triage_bot.slack.app import Deps

log = logging.getLogger(__name__)

NOT_IN_CHANNEL = ("not_in_channel", "channel_not_found", "is_archived")


def register(app: App, deps: Deps) -> None:
    accept, on_shortcut = durable(
        deps, "shortcut", lambda deps, body, client, _context: handle_shortcut(deps, body, client)
    )
    callback_id = deps.config.shortcut_callback_id
    app.message_shortcut(callback_id)(ack=accept, lazy=[on_shortcut])
    deps.surfaces.shortcuts.add(callback_id)


def handle_shortcut(deps: Deps, shortcut: dict[str, Any], client: WebClient) -> None:
    message = shortcut.get("message") or {}
    channel = (shortcut.get("channel") or {}).get("id", "")
    user = (shortcut.get("user") or {}).get("id", "")
    thread_ts = message.get("thread_ts") or message.get("ts")
    text, problems = deps.job.gather(client, message.get("text", ""), message.get("files"))
    if not text.strip():
        reply = text_message(
            "There is nothing to triage in that message.",
            "\n".join(problems) or "It has no text and no readable file.",
        )
        deps.delivery.respond(shortcut["response_url"], {"response_type": "ephemeral", **reply.kwargs()})
        return
    # keyed on the message: choosing the shortcut twice on one message records one occurrence
    key = f"shortcut:{channel}:{message.get('ts', '')}"[:64]
    triaged = deps.job.run(text, channel=channel, thread_ts=thread_ts, user=user, key=key)
    triaged.notes.extend(problems)
    answer = triaged.message()
    match = triaged.answer.match
    response = post_answer(
        deps,
        client,
        channel,
        thread_ts,
        answer,
        triaged.incident_id,
        match.engine if match else None,
        triaged.full_text,
        key=once_key(shortcut),
    )
    if isinstance(response, Failure) and response.error in NOT_IN_CHANNEL:
        hint = text_message(
            "I'm not in this channel, so only you see this answer.",
            "Invite me with `/invite @triage-bot` to answer in threads here.",
        )
        deps.delivery.respond(
            shortcut["response_url"],
            {
                "response_type": "ephemeral",
                "text": answer.text,
                "blocks": [*hint.blocks, *answer.blocks][:50],
            },
        )
