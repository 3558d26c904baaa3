"""Alerts: one Slack message per incident, edited in place as it changes, resolved in its thread.

The health checks talk to a small `Notifier` interface, so the core never imports Slack:
`triage_bot.slack.outputs.SlackNotifier` posts to the alert channel and returns the message's
(channel, ts); later changes go through chat.update on that message, and the resolution is also
posted as a reply in its thread so the people who followed it are told. `RecordingNotifier`
keeps the calls in memory for tests and the CLI.

Everything shown comes from the engine (names, error text) and is escaped for mrkdwn (`&`, `<`,
`>`), so an engine or model name cannot mention @channel or forge a link.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

log = logging.getLogger(__name__)

SEVERITY_ICON = {
    "critical": ":red_circle:",
    "high": ":large_orange_circle:",
    "medium": ":large_yellow_circle:",
    "low": ":white_circle:",
    "info": ":information_source:",
}
SECTION_MAX = 3000


@dataclass(frozen=True)
class MessageRef:
    channel: str
    ts: str


@dataclass(frozen=True)
class Alert:
    engine: str  # the instance name from engines.yaml
    kind: str  # vllm | sglang | trtllm | triton
    state: str
    signature_id: str
    title: str
    message: str  # the line the bot writes, e.g. "engine llama-prod is down: connection refused"
    severity: str
    opened_at: datetime
    incident_id: int | None = None
    recovery: str = ""
    faq: str = ""
    resolved_at: datetime | None = None
    resolution: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    def resolved(self, at: datetime, note: str) -> Alert:
        return replace(self, resolved_at=at, resolution=note)


class Notifier(Protocol):
    def post(self, alert: Alert) -> MessageRef | None: ...

    def update(self, ref: MessageRef, alert: Alert) -> None: ...

    def resolve(self, ref: MessageRef, alert: Alert) -> None: ...


def escape(text: str) -> str:
    """The three mrkdwn control characters, and nothing else (Slack's own rule)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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


class RecordingNotifier:
    """Keeps every call; posts get sequential fake timestamps. For tests and dry runs."""

    def __init__(self, channel: str = "C-ALERTS"):
        self.channel = channel
        self.calls: list[tuple[str, MessageRef, Alert]] = []
        self._n = 0

    def post(self, alert: Alert) -> MessageRef:
        self._n += 1
        ref = MessageRef(self.channel, f"1700000000.{self._n:06d}")
        self.calls.append(("post", ref, alert))
        return ref

    def update(self, ref: MessageRef, alert: Alert) -> None:
        self.calls.append(("update", ref, alert))

    def resolve(self, ref: MessageRef, alert: Alert) -> None:
        self.calls.append(("resolve", ref, alert))

    def kinds(self) -> list[tuple[str, str, str]]:
        return [(kind, a.engine, a.state) for kind, _, a in self.calls]
