"""Modal submissions: the signature picked in "Wrong match", recorded as feedback, and the note
written in "Resolve", which closes the incident."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from slack_bolt import App
from slack_sdk import WebClient

from triage_bot.slack.blocks import text_message
from triage_bot.slack.listeners import durable
from triage_bot.slack.modals import (
    ACTION_NOTE,
    ACTION_PICK,
    BLOCK_NOTE,
    BLOCK_PICK,
    NONE_OF_THESE,
    RESOLVE_VIEW,
    WRONG_MATCH_VIEW,
)
from triage_bot.slack.text import escape

if TYPE_CHECKING:
    from triage_bot.slack.app import Deps

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    accept, on_wrong_match = durable(
        deps,
        "wrong_match_view",
        lambda deps, body, _client, _ctx: handle_wrong_match(deps, body, body.get("view") or {}),
    )
    app.view(WRONG_MATCH_VIEW)(ack=accept, lazy=[on_wrong_match])
    deps.surfaces.views.add(WRONG_MATCH_VIEW)
    accept, on_resolve = durable(
        deps,
        "resolve_view",
        lambda deps, body, client, _ctx: handle_resolve(deps, body, client, body.get("view") or {}),
    )
    app.view(RESOLVE_VIEW)(ack=accept, lazy=[on_resolve])
    deps.surfaces.views.add(RESOLVE_VIEW)


def _metadata(view: dict[str, Any]) -> dict[str, Any]:
    try:
        meta = json.loads(view.get("private_metadata") or "{}")
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def handle_resolve(deps: Deps, body: dict[str, Any], client: WebClient, view: dict[str, Any]) -> None:
    """Resolve with the note from the modal, then update the answer the button was on."""
    from triage_bot.slack.listeners.actions import posted_message, resolve_incident

    meta = _metadata(view)
    user = str((body.get("user") or {}).get("id", ""))
    incident = meta.get("i")
    if not deps.config.is_admin(user) or not isinstance(incident, int):
        return  # the modal opens for admins only; a forged or stale submission changes nothing
    field = (((view.get("state") or {}).get("values") or {}).get(BLOCK_NOTE) or {}).get(ACTION_NOTE) or {}
    note = str(field.get("value") or "").strip() or None
    answer: dict[str, Any] = {"response_url": meta.get("u")}
    channel, ts = meta.get("c"), meta.get("t")
    if isinstance(channel, str) and isinstance(ts, str):
        message = posted_message(deps, client, channel, ts)
        if message is not None:
            answer |= {"container": {"channel_id": channel, "message_ts": ts}, "message": message}
    resolve_incident(deps, answer, client, incident, user, note)


def handle_wrong_match(deps: Deps, body: dict[str, Any], view: dict[str, Any]) -> None:
    meta = _metadata(view)
    picked = (((view.get("state") or {}).get("values") or {}).get(BLOCK_PICK) or {}).get(ACTION_PICK) or {}
    choice = (picked.get("selected_option") or {}).get("value")
    correct = None if choice in (None, NONE_OF_THESE) else str(choice)
    if correct is not None and deps.job.triager.kb.get(correct) is None:
        correct = None  # only ids the knowledge base knows are stored
    user = (body.get("user") or {}).get("id", "")
    incident = meta.get("i")
    recorded = False
    if deps.history is not None and isinstance(incident, int):
        try:
            deps.history.record_feedback(incident, user, "wrong_match", correct_signature_id=correct)
            recorded = True
        except Exception as exc:
            log.error("could not record wrong-match feedback for #%s: %s", incident, exc)
    if meta.get("u"):
        said = f"`{escape(correct)}`" if correct else "none of the known signatures"
        title = "Thanks, recorded." if recorded else "Thanks."
        deps.delivery.respond(
            meta["u"],
            {
                "response_type": "ephemeral",
                "replace_original": False,
                **text_message(title, f"You said it was {said}.").kwargs(),
            },
        )
