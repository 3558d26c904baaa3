"""Alerts: what the health checks tell people, one per incident, changed in place and resolved.

The health checks talk to a small `Notifier` interface, so the core never imports Slack:
`triage_bot.slack.outputs.SlackNotifier` posts to the alert channel and returns the message's
(channel, ts); later changes go through chat.update on that message, and the resolution is also
posted as a reply in its thread so the people who followed it are told. How an alert looks in
Slack is the adapter's (triage_bot/slack/alerts.py). `RecordingNotifier` keeps the calls in
memory for tests and the CLI.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

log = logging.getLogger(__name__)


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
