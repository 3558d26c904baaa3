"""How an alert looks in Slack: its text, its Block Kit and the Acknowledge button.

Everything shown comes from the engine (names, error text) and is escaped for mrkdwn (`&`, `<`,
`>`), so an engine or model name cannot mention @channel or forge a link.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from triage_bot.blockkit import escape
from triage_bot.health.alerts import Alert

log = logging.getLogger(__name__)

SEVERITY_ICON = {
    "critical": ":red_circle:",
    "high": ":large_orange_circle:",
    "medium": ":large_yellow_circle:",
    "low": ":white_circle:",
    "info": ":information_source:",
}


SECTION_MAX = 3000


def _clip(text: str, limit: int = SECTION_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def alert_text(alert: Alert) -> str:
    """The notification text (fallback for screen readers and push notifications)."""
    prefix = "Resolved: " if alert.resolved_at else ""
    return _clip(escape(f"{prefix}{alert.message}"), 1000)


ACTION_ACK = "triage_acknowledge"  # the Acknowledge button, on alerts and answers (MTTA)


def ack_button(incident_id: int) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": ACTION_ACK,
        "text": {"type": "plain_text", "text": "Acknowledge"},
        "value": json.dumps({"i": incident_id}, separators=(",", ":")),
    }


def alert_blocks(alert: Alert) -> list[dict[str, Any]]:
    """Block Kit for an alert, within Slack's limits (section text ≤ 3000, context ≤ 10 elements)."""
    icon = ":white_check_mark:" if alert.resolved_at else SEVERITY_ICON.get(alert.severity, "")
    status = "resolved" if alert.resolved_at else "open"
    header = f"{icon} *{escape(alert.title)}* on `{escape(alert.engine)}` ({escape(alert.kind)}) — {status}"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": _clip(f"{header}\n{escape(alert.message)}")}},
    ]
    if alert.resolved_at:
        took = alert.resolved_at - alert.opened_at
        blocks.append(
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": _clip(
                        f"*Resolved* after {_duration(took.total_seconds())}: {escape(alert.resolution)}"
                    ),
                },
            }
        )
    elif alert.recovery:
        blocks.append(
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": _clip("*What to do*\n" + _recovery_mrkdwn(alert.recovery)),
                },
            }
        )
    if alert.faq and not alert.resolved_at:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(escape(alert.faq), 2000)}]}
        )
    context = [
        f"`{alert.signature_id}`",
        f"severity {alert.severity}",
        f"opened <!date^{int(alert.opened_at.timestamp())}^{{date_short_pretty}} {{time}}|{alert.opened_at:%Y-%m-%d %H:%M} UTC>",
    ]
    if alert.incident_id is not None:
        context.append(f"incident #{alert.incident_id}")
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": c} for c in context]})
    if alert.incident_id is not None and not alert.resolved_at:
        blocks.append(
            {
                "type": "actions",
                "block_id": "triage_alert_actions",
                "elements": [ack_button(alert.incident_id)],
            }
        )
    return blocks


def _recovery_mrkdwn(text: str) -> str:
    """Command lines (`$ ...`) as code blocks, prose as text; the bot shows them, it never runs them."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append(f"```{escape(line[2:])}```")
        elif line.strip():
            out.append(escape(line))
    return "\n".join(out)


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds / 3600:.1f} h"
