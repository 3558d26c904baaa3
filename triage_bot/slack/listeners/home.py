"""App Home: open incidents, the engines' last health state and the last digest, on one page.

Rebuilt on every `app_home_opened`, so it is always current without a background job. Each part
fails on its own: a database that is away turns its part into a sentence, not an empty tab.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from slack_bolt import App
from slack_sdk import WebClient

from triage_bot.blockkit import MAX_SECTION, MAX_VIEW_BLOCKS
from triage_bot.slack.blocks import context, header, section
from triage_bot.slack.listeners import ack_now, logged
from triage_bot.slack.text import escape, truncate

if TYPE_CHECKING:
    from triage_bot.slack.app import Deps

log = logging.getLogger(__name__)

EVENTS = ("app_home_opened",)
OPEN_LIMIT = 20
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")


def register(app: App, deps: Deps) -> None:
    @logged
    def on_home(event: dict[str, Any], client: WebClient) -> None:
        if event.get("tab", "home") != "home":
            return
        deps.delivery.call("views.publish", client, user_id=event["user"], view=home_view(deps))

    app.event("app_home_opened")(ack=ack_now, lazy=[on_home])
    deps.surfaces.events.update(EVENTS)


def _open_incidents(deps: Deps) -> list[str]:
    if deps.history is None:
        return ["_The incident history is not configured._"]
    try:
        incidents = [
            i for i in deps.history.history(days=None, limit=200) if i.status in ("open", "acknowledged")
        ]
    except Exception as exc:
        log.warning("App Home: cannot read incidents: %s", exc)
        return ["_The incident history cannot be read right now._"]
    if not incidents:
        return ["No open incidents. :tada:"]
    lines = []
    for inc in incidents[:OPEN_LIMIT]:
        where = f"<#{inc.target}>" if _CHANNEL_ID.match(inc.target or "") else escape(inc.target or "")
        lines.append(
            f"`#{inc.id}` `{escape(inc.signature_id)}` · {escape(inc.engine)} · {inc.occurrence_count}× "
            f"since {inc.first_seen:%Y-%m-%d %H:%M} · {where}"
        )
    if len(incidents) > OPEN_LIMIT:
        lines.append(f"_…and {len(incidents) - OPEN_LIMIT} more: `{deps.config.command} history`_")
    return lines


def _chunks(lines: list[str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    current = ""
    for line in lines:
        if current and len(current) + len(line) + 1 > MAX_SECTION - 20:
            blocks.append(section(current))
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        blocks.append(section(current))
    return blocks


def home_view(deps: Deps) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        header("triage-bot"),
        context(f"Paste an engine error in a channel I'm in, or try `{deps.config.command} help`."),
    ]
    blocks += [{"type": "divider"}, section("*Open incidents*"), *_chunks(_open_incidents(deps))]
    engines, empty = deps.integrations.engines()
    blocks += [
        {"type": "divider"},
        section("*Engine health*"),
        *_chunks([line.mrkdwn() for line in engines] or [escape(empty)]),
    ]
    quiet, none = deps.integrations.quiet_periods()
    blocks += [section("*Mutes and maintenance*"), *_chunks(quiet or [escape(none)])]
    digest, no_digest = deps.integrations.digest()
    blocks += [{"type": "divider"}, section("*Digest of the week*")]
    if digest is None:
        blocks.append(section(escape(no_digest)))
    elif digest.blocks and len(blocks) + len(digest.blocks) <= MAX_VIEW_BLOCKS:
        blocks += digest.blocks
    else:
        blocks.append(section(truncate(digest.text, MAX_SECTION)))
    return {"type": "home", "blocks": blocks[:MAX_VIEW_BLOCKS]}
