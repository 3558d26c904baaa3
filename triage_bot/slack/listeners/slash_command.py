"""`/triage …`: an ephemeral answer for the person who asked, with a button to post it to the channel.

Slack waits 3 seconds for the ack, so the ack is empty and immediate; the subcommand runs after
it and its result goes back through the command's `response_url` (which works in any channel,
including ones the bot is not in). The result is kept (`slack_shares`) so "Post to channel"
can post exactly what the user saw.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import App

from triage_bot.slack.blocks import Message, with_share_button
from triage_bot.slack.listeners import durable
from triage_bot.slack.text import from_slack

if TYPE_CHECKING:
    from triage_bot.slack.app import Deps

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    accept, on_command = durable(
        deps, "command", lambda deps, body, _client, _context: handle_command(deps, body)
    )
    app.command(deps.config.command)(ack=accept, lazy=[on_command])
    deps.surfaces.commands.add(deps.config.command)


def ephemeral(
    deps: Deps, message: Message, *, channel: str, user: str, kind: str, incident_id: int | None = None
) -> dict[str, Any]:
    """The response_url body of an ephemeral reply, with "Post to channel" when it can be kept."""
    if deps.store is not None and channel:
        try:
            key = deps.store.put_share(channel, user, kind, message.text, message.blocks, incident_id)
            message = with_share_button(message, key)
        except Exception as exc:
            log.warning("cannot keep the answer for 'Post to channel': %s", exc)
    return {"response_type": "ephemeral", "replace_original": False, **message.kwargs()}


def handle_command(deps: Deps, command: dict[str, Any]) -> None:
    user = command.get("user_id") or ""
    channel = command.get("channel_id") or ""
    result = deps.commands.run(from_slack(command.get("text", "")), user=user, channel=channel)
    body = ephemeral(
        deps, result.message, channel=channel, user=user, kind=result.kind, incident_id=result.incident_id
    )
    deps.delivery.respond(command["response_url"], body)
    if result.resolved is not None:
        from triage_bot.slack.listeners.actions import clear_resolve_button

        clear_resolve_button(deps, result.resolved, user)
