"""`@triage-bot <error, question or subcommand>`: always answered, in the thread of the mention.

Being addressed is a request, so unlike a passive paste it always gets an answer: a match, "no
known signature" with the nearest candidates, or why an attached file could not be read. A
subcommand (`@triage-bot history vllm`) works as with `/triage`, and a question with no error in it
(`@triage-bot what does --enforce-eager cost?`) gets the FAQ or the engine decision guide.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from triage_bot.slack.blocks import text_message
from triage_bot.slack.listeners import durable, post_answer
from triage_bot.slack.text import strip_mention

if TYPE_CHECKING:
    from triage_bot.slack.app import Deps

log = logging.getLogger(__name__)

EVENTS = ("app_mention",)


def register(app: App, deps: Deps) -> None:
    def work(deps: Deps, body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        handle_mention(deps, body, body.get("event") or {}, client, context)

    accept, on_mention = durable(deps, "mention", work)

    app.event("app_mention")(ack=accept, lazy=[on_mention])
    deps.surfaces.events.update(EVENTS)


def handle_mention(
    deps: Deps, body: dict[str, Any], event: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    event_id = body.get("event_id")
    channel = event.get("channel") or ""
    thread_ts = event.get("thread_ts") or event.get("ts")
    user = event.get("user") or ""
    wire = strip_mention(event.get("text", ""), context.bot_user_id or "")
    text, problems = deps.job.gather(client, wire, event.get("files"))
    if not text.strip() and problems:
        message = text_message("I could not read the attachment.", "\n".join(problems))
        deps.delivery.post(channel, message.kwargs(), thread_ts=thread_ts, client=client)
        return
    result = deps.commands.run(
        text, user=user, channel=channel, key=event_id, thread_ts=thread_ts, notes=problems
    )
    match = result.triaged.answer.match if result.triaged else None
    post_answer(
        deps,
        client,
        channel,
        thread_ts,
        result.message,
        result.incident_id,
        match.engine if match else None,
        result.triaged.full_text if result.triaged else None,
        key=event_id,
    )
