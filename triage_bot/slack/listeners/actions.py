"""The buttons on answers: Acknowledge, Resolved, Wrong match, Helpful, Details and Post to channel.

Acknowledge (on answers and on alerts) records who took the incident and when: the message says
so for everyone, and the digest's MTTA is built from it. Anyone in the channel may acknowledge.

Every click is recorded in the history as feedback (the digest and the knowledge base's authors
read it). Resolving changes the incident for everyone, so it is limited to the configured admins;
anyone else gets a polite note only they can see. Resolved opens a modal that asks how it was fixed
(the next recurrence shows that note); Wrong match opens one to pick the right signature (`views`).
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.web import SlackResponse

from triage_bot.slack.alerts import ACTION_ACK
from triage_bot.slack.blocks import (
    ACTION_DETAILS,
    ACTION_HELPFUL,
    ACTION_POST,
    ACTION_RESOLVE,
    ACTION_WRONG,
    Message,
    context,
    details_message,
    text_message,
    without_share_button,
)
from triage_bot.slack.commands import refusal
from triage_bot.slack.delivery import Failure
from triage_bot.slack.listeners import durable, once_key, post_answer
from triage_bot.slack.modals import resolve_modal, wrong_match_modal
from triage_bot.slack.text import escape, truncate

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore
    from triage_bot.slack.app import Deps

log = logging.getLogger(__name__)

_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


def register(app: App, deps: Deps) -> None:
    for action_id, kind, work in (
        (ACTION_ACK, "acknowledge", lambda deps, body, client, _ctx: handle_acknowledge(deps, body, client)),
        (ACTION_RESOLVE, "resolve", lambda deps, body, client, _ctx: handle_resolve(deps, body, client)),
        (
            ACTION_WRONG,
            "wrong_match",
            lambda deps, body, client, _ctx: handle_wrong_match(deps, body, client),
        ),
        (ACTION_HELPFUL, "helpful", lambda deps, body, _client, _ctx: handle_helpful(deps, body)),
        (ACTION_DETAILS, "details", lambda deps, body, _client, _ctx: handle_details(deps, body)),
        (ACTION_POST, "post", lambda deps, body, client, _ctx: handle_post(deps, body, client)),
    ):
        accept, lazy = durable(deps, kind, work)
        app.action(action_id)(ack=accept, lazy=[lazy])
        deps.surfaces.actions.add(action_id)


def _value(body: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads((body.get("actions") or [{}])[0].get("value") or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _user(body: dict[str, Any]) -> str:
    return str((body.get("user") or {}).get("id", ""))


def _mention(user: str) -> str:
    """A mention built by the bot from an id Slack sent, never from text."""
    return f"<@{user}>" if _USER_ID.match(user) else "someone"


def _tell(deps: Deps, body: dict[str, Any], title: str, text: str = "") -> None:
    """An ephemeral note to the person who clicked."""
    url = body.get("response_url")
    if url:
        deps.delivery.respond(
            url,
            {"response_type": "ephemeral", "replace_original": False, **text_message(title, text).kwargs()},
        )


def _incident(deps: Deps, body: dict[str, Any]) -> tuple[HistoryStore, int] | None:
    """The history and the incident a button acts on, or None (and the clicker is told why)."""
    value = _value(body)
    incident = value.get("i")
    if deps.history is None or not isinstance(incident, int):
        _tell(
            deps,
            body,
            "This answer has no incident record.",
            "The incident history was not available when it was posted, so there is nothing to update.",
        )
        return None
    return deps.history, incident


def handle_resolve(deps: Deps, body: dict[str, Any], client: WebClient) -> None:
    """Admins only. Opens a modal that asks how it was fixed; the submission resolves (views.py).
    When the modal cannot open (no trigger, or Slack refuses it), the click resolves at once."""
    user = _user(body)
    if not deps.config.is_admin(user):
        message = refusal("resolve")
        deps.delivery.respond(
            body["response_url"],
            {"response_type": "ephemeral", "replace_original": False, **message.kwargs()},
        )
        return
    found = _incident(deps, body)
    if found is None:
        return
    _history, incident = found
    container = body.get("container") or {}
    metadata = {
        "i": incident,
        "c": container.get("channel_id"),
        "t": None if container.get("is_ephemeral") else container.get("message_ts"),
        "u": body.get("response_url"),
    }
    trigger = body.get("trigger_id")
    if trigger:
        opened = deps.delivery.call(
            "views.open", client, trigger_id=trigger, view=resolve_modal(incident, json.dumps(metadata))
        )
        if not isinstance(opened, Failure):
            return
        log.warning("the Resolve modal did not open (%s): resolving without a note", opened.error)
    resolve_incident(deps, body, client, incident, user, None)


def resolve_incident(
    deps: Deps, body: dict[str, Any], client: WebClient, incident: int, user: str, note: str | None
) -> None:
    """Close the incident with its note, then show who resolved it (and how) under its answer."""
    history = deps.history
    if history is None:
        return

    def resolve() -> bool | None:
        changed = history.resolve(incident, by=user, note=note)
        history.record_feedback(incident, user, "resolved")
        return changed

    _change(
        deps,
        body,
        client,
        incident,
        resolve,
        done="resolved",
        note=f":white_check_mark: Resolved by {_mention(user)}",
        how=f": {escape(truncate(note, 300))}" if note else "",
        drop=None,
        unposted=("Its next repeat opens a new incident.",),
    )


def handle_acknowledge(deps: Deps, body: dict[str, Any], client: WebClient) -> None:
    found = _incident(deps, body)
    if found is None:
        return
    history, incident = found
    user = _user(body)
    _change(
        deps,
        body,
        client,
        incident,
        lambda: history.acknowledge(incident, by=user),
        done="acknowledged",
        note=f":eyes: Acknowledged by {_mention(user)}",
        drop=ACTION_ACK,
    )


def _change(
    deps: Deps,
    body: dict[str, Any],
    client: WebClient,
    incident: int,
    apply: Any,
    *,
    done: str,
    note: str,
    drop: str | None,
    how: str = "",
    unposted: tuple[str, ...] = (),
) -> None:
    """Apply a change to the incident (`apply` returns False when it was already made), then show who
    made it under the clicked message for everyone, or tell the clicker when there is no message."""
    from triage_bot.history import IncidentNotFound

    try:
        changed = apply()
    except IncidentNotFound:
        _tell(deps, body, f"Incident #{incident} no longer exists.")
        return
    if changed is False:
        _tell(deps, body, f"Incident #{incident} was already {done}.")
        return
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if not _edit(deps, body, client, context(f"{note} on {stamp} (incident #{incident}){how}"), drop=drop):
        _tell(deps, body, f"Incident #{incident} {done}.", *unposted)


def _edit(
    deps: Deps, body: dict[str, Any], client: WebClient, note: dict[str, Any], drop: str | None = None
) -> bool:
    """Add `note` under the clicked message for everyone; without the `drop` button, or all buttons."""
    container = body.get("container") or {}
    message = body.get("message")
    if not message or container.get("is_ephemeral"):
        return False
    blocks = []
    for block in message.get("blocks", []):
        if block.get("type") == "actions":
            if drop is None:
                continue
            block = {
                **block,
                "elements": [e for e in block.get("elements", []) if e.get("action_id") != drop],
            }
            if not block["elements"]:
                continue
        blocks.append(block)
    deps.delivery.call(
        "chat.update",
        client,
        channel=container.get("channel_id"),
        ts=container.get("message_ts"),
        text=message.get("text", ""),
        blocks=[*blocks, note],
    )
    return True


def handle_wrong_match(deps: Deps, body: dict[str, Any], client: WebClient) -> None:
    value = _value(body)
    container = body.get("container") or {}
    metadata = {
        "i": value.get("i"),
        "s": value.get("s"),
        "c": container.get("channel_id"),
        "t": container.get("message_ts"),
        "u": body.get("response_url"),
    }
    view = wrong_match_modal(deps.job.triager.kb, value.get("s"), json.dumps(metadata))
    deps.delivery.call("views.open", client, trigger_id=body["trigger_id"], view=view)


def handle_helpful(deps: Deps, body: dict[str, Any]) -> None:
    found = _incident(deps, body)
    if found is None:
        return
    history, incident = found
    history.record_feedback(incident, _user(body), "helpful")
    _tell(deps, body, "Thanks, noted that this answer helped.")


def handle_details(deps: Deps, body: dict[str, Any]) -> None:
    """Why, the protocol, the FAQ and the docs, shown only to whoever asked (the answer stays short)."""
    value = _value(body)
    sig_id, engine = value.get("s"), value.get("e")
    sig = deps.job.triager.kb.get(sig_id) if isinstance(sig_id, str) else None
    if sig is None:
        _tell(deps, body, "No details for this answer.", "The signature is no longer in the knowledge base.")
        return
    url = body.get("response_url")
    if url:
        message = details_message(sig, engine if isinstance(engine, str) else None)
        deps.delivery.respond(
            url, {"response_type": "ephemeral", "replace_original": False, **message.kwargs()}
        )


def handle_post(deps: Deps, body: dict[str, Any], client: WebClient) -> None:
    key = _value(body).get("k")
    share = deps.store.get_share(key) if deps.store is not None and isinstance(key, str) else None
    if share is None:
        _tell(deps, body, "That answer is no longer kept.", f"Run `{deps.config.command}` again to post it.")
        return
    user = _user(body)
    blocks = [
        context(f"Shared by {_mention(user)} from `{deps.config.command}`"),
        *without_share_button(share.blocks),
    ]
    response = post_answer(
        deps,
        client,
        share.channel,
        None,
        Message(share.text, blocks[:50]),
        share.incident_id,
        None,
        key=once_key(body),
    )
    if isinstance(response, Failure):
        if response.error in ("not_in_channel", "channel_not_found"):
            _tell(
                deps,
                body,
                "I can't post in this channel yet.",
                "Invite me with `/invite @triage-bot`, then press the button again.",
            )
        else:
            _tell(deps, body, "Slack did not take the message.", f"It answered `{response.error}`.")
        return
    # the answer is in the channel now (or queued in the outbox): remove the ephemeral copy
    deps.delivery.respond(body["response_url"], {"delete_original": True})


def posted_message(deps: Deps, client: WebClient, channel: str, ts: str) -> dict[str, Any] | None:
    """The message at (channel, ts) as Slack holds it now, or None when it cannot be read."""
    found = deps.delivery.call("conversations.replies", client, channel=channel, ts=ts, limit=1)
    messages = (found.get("messages") if isinstance(found, SlackResponse) else None) or []
    return next((m for m in messages if m.get("ts") == ts), None)


def clear_resolve_button(deps: Deps, incident: int, user: str) -> None:
    """After `/triage resolve N`, the incident's posted answer shows who resolved it and loses its
    Resolved button, as a click on the button does (a live button on a closed incident misleads)."""
    if deps.history is None:
        return
    try:
        ref = deps.history.find_posted(incident_id=incident, kind="answer")
        if ref is None:
            return
        client = deps.delivery.client
        message = posted_message(deps, client, ref.channel, ref.ts)
        if message is None:
            return
        body = {"container": {"channel_id": ref.channel, "message_ts": ref.ts}, "message": message}
        note = context(f":white_check_mark: Resolved by {_mention(user)} (`/triage resolve`)")
        _edit(deps, body, client, note, drop=ACTION_RESOLVE)
    except Exception as exc:  # the incident is resolved; the old button is only cosmetic
        log.warning("could not update the answer of incident %s after /triage resolve: %s", incident, exc)
