"""Alertmanager's webhook (payload version 4) in: each alert is an incident, posted once, edited on
resolution.

Why here, beside the health monitor: an alert from the team's own Prometheus is the same thing as
a failed engine check, so it takes the same path (the history, the `Notifier`, the alert blocks)
and the digest counts both. The incident is keyed by Alertmanager's own fingerprint (a hash of
the alert's labels), so the repeats Alertmanager sends every `repeat_interval`, and the same
notification sent again after a failed delivery, join it instead of opening new ones. When the
labels and annotations name an engine and the triager recognises the state they describe, the
recovery and the FAQ of that signature are attached. Nothing here knows about Slack or HTTP.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from triage_bot import metrics
from triage_bot.health.alerts import Alert, MessageRef, Notifier
from triage_bot.health.rules import SIGNATURES

if TYPE_CHECKING:
    from triage_bot.core import Triager
    from triage_bot.history import HistoryStore

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def engine_words() -> tuple[tuple[str, str], ...]:
    """(word, probe kind) for every word a probe says names it in labels: longest first, then in
    alphabetical order, so the same labels always name the same kind."""
    from triage_bot.health.probes import available_kinds, get_probe

    pairs = [(word, kind) for kind in available_kinds() for word in get_probe(kind).WORDS]
    return tuple(sorted(pairs, key=lambda pair: (-len(pair[0]), pair[0])))


POSTED_KIND = "alertmanager_alert"
BY = "alertmanager"
MAX_ALERTS = 1000  # Alertmanager caps a notification at max_alerts; more than this is not from it
ENGINE_LABELS = ("engine", "kind", "job", "service", "container", "app", "app_kubernetes_io_name", "pod")
SEVERITIES = {
    "critical": "critical",
    "page": "critical",
    "error": "high",
    "high": "high",
    "warning": "medium",
    "warn": "medium",
    "medium": "medium",
    "info": "info",
    "low": "low",
    "none": "info",
}
# An alert rule's name says which state it watches; the first words that appear decide (the
# `triage_state` label, when a rule sets it, wins). These are the health monitor's own states.
STATE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kv_cache_saturated", ("kv_cache", "kvcache", "cache_usage", "token_usage")),
    ("preemption_storm", ("preempt", "retract")),
    ("queue_starvation", ("starv", "queue", "waiting")),
    ("request_failure_rate_high", ("error_rate", "failure_rate", "errors", "failed_requests", "5xx")),
    ("stuck", ("stuck", "hang", "no_progress", "not_generating")),
    ("flapping", ("flap",)),
    ("metrics_missing", ("metrics_missing", "absent", "no_metrics")),
    ("down", ("down", "unreachable", "unavailable", "not_ready", "crashloop", "unhealthy")),
)
_SLUG = re.compile(r"[^a-z0-9]+")
_FINGERPRINT = re.compile(r"^[0-9a-f]{1,64}$")


class PayloadError(ValueError):
    """The body is not an Alertmanager v4 webhook payload."""


@dataclass(frozen=True)
class AmAlert:
    status: str  # firing | resolved
    fingerprint: str
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime
    ends_at: datetime | None

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "alert")

    @property
    def engine_kind(self) -> str | None:
        """The serving engine the labels name, if any (vllm, sglang, trtllm, triton)."""
        for label in ENGINE_LABELS:
            value = self.labels.get(label, "").lower()
            for word, kind in engine_words():
                if word in value:
                    return kind
        return None

    @property
    def severity(self) -> str:
        return SEVERITIES.get(self.labels.get("severity", "").lower(), "medium")

    @property
    def summary(self) -> str:
        """The line the alert message shows, the same on the post and on its resolution edit."""
        return self.annotations.get("summary") or self.annotations.get("description") or self.name

    @property
    def instance(self) -> str:
        return (self.labels.get("instance") or self.labels.get("pod") or self.labels.get("job") or self.name)[
            :64
        ]

    @property
    def state(self) -> str | None:
        """The health state the alert is about, if it names one (see STATE_WORDS)."""
        explicit = self.labels.get("triage_state", "").strip().lower()
        if explicit in SIGNATURES:
            return explicit
        words = _SLUG.sub("_", f"{self.name} {self.annotations.get('summary', '')}".lower())
        return next((state for state, needles in STATE_WORDS if any(n in words for n in needles)), None)

    @property
    def text(self) -> str:
        """What the triager reads: the summary and description, and the labels that say where."""
        parts = [self.annotations.get(k, "") for k in ("summary", "description", "message")]
        parts += [f"{k}={v}" for k, v in sorted(self.labels.items())]
        return "\n".join(p for p in parts if p)


def _time(raw: Any, field: str) -> datetime | None:
    if not isinstance(raw, str) or not raw or raw.startswith("0001-01-01"):
        return None  # Go's zero time: "not ended"
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise PayloadError(f"{field} is not a time: {raw[:40]!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _strings(raw: Any, field: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise PayloadError(f"{field} must be an object")
    return {str(k)[:128]: str(v)[:2000] for k, v in raw.items()}


def parse_payload(body: bytes) -> list[AmAlert]:
    """The alerts of one notification; PayloadError (the sender gets a 400) when it is not one."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PayloadError("the body is not JSON") from None
    if (
        not isinstance(data, dict)
        or str(data.get("version")) != "4"
        or not isinstance(data.get("alerts"), list)
    ):
        raise PayloadError("expected an Alertmanager webhook payload (version 4, with alerts)")
    if len(data["alerts"]) > MAX_ALERTS:
        raise PayloadError(f"more than {MAX_ALERTS} alerts in one notification")
    alerts = []
    for i, raw in enumerate(data["alerts"]):
        if not isinstance(raw, dict) or raw.get("status") not in ("firing", "resolved"):
            raise PayloadError(f"alerts[{i}].status must be firing or resolved")
        fingerprint = str(raw.get("fingerprint", ""))
        if not _FINGERPRINT.match(fingerprint):
            raise PayloadError(f"alerts[{i}].fingerprint must be Alertmanager's hex fingerprint")
        starts = _time(raw.get("startsAt"), f"alerts[{i}].startsAt")
        alerts.append(
            AmAlert(
                status=raw["status"],
                fingerprint=fingerprint,
                labels=_strings(raw.get("labels", {}), f"alerts[{i}].labels"),
                annotations=_strings(raw.get("annotations", {}), f"alerts[{i}].annotations"),
                starts_at=starts or datetime.now(UTC),
                ends_at=_time(raw.get("endsAt"), f"alerts[{i}].endsAt"),
            )
        )
    return alerts


@dataclass
class Outcome:
    opened: int = 0
    repeated: int = 0
    resolved: int = 0


class AlertmanagerReceiver:
    """Turns alerts into incidents and alert messages, through the history and a Notifier."""

    def __init__(
        self, store: HistoryStore, notifier: Notifier | None, triager: Triager, min_confidence: float = 0.5
    ):
        self.store, self.notifier, self.triager = store, notifier, triager
        self.min_confidence = min_confidence

    def handle(self, alerts: list[AmAlert]) -> Outcome:
        """Raises when the history cannot take an alert, so the webhook fails and Alertmanager retries."""
        outcome = Outcome()
        for alert in alerts:
            metrics.ALERT_HOOKS.labels(alert.status).inc()
            if alert.status == "firing":
                if self._fire(alert):
                    outcome.opened += 1
                else:
                    outcome.repeated += 1
            elif self._resolve(alert):
                outcome.resolved += 1
        return outcome

    # -- the incident -----------------------------------------------------------------------

    @staticmethod
    def signature(alert: AmAlert) -> str:
        """Stable for the alert's life (its name, not its text, which Alertmanager re-templates)."""
        return "alertmanager." + (_SLUG.sub("_", alert.name.lower()).strip("_")[:100] or "alert")

    @staticmethod
    def target(alert: AmAlert) -> str:
        return f"am:{alert.fingerprint}"

    def _fire(self, am: AmAlert) -> bool:
        from triage_bot.history import Sighting

        result = self.store.record(
            Sighting(
                signature_id=self.signature(am),
                engine=am.engine_kind or "unknown",
                target=self.target(am),
                severity=am.severity,
                source="health",
                excerpt=am.text,
                values={"alertname": am.name, "fingerprint": am.fingerprint},
                seen_at=am.starts_at,
                key=f"am-{am.fingerprint}-{int(am.starts_at.timestamp())}"[:64],
            )
        )
        incident_id = getattr(result, "incident_id", None)
        if getattr(result, "muted", False) or self.notifier is None:
            return bool(getattr(result, "is_new", False))
        if incident_id is not None and self._posted(incident_id) is not None:
            return False  # Alertmanager's repeat of an alert already posted
        alert = self._alert(am, incident_id)
        ref = self.notifier.post(alert)
        if ref is None:
            raise RuntimeError("the alert could not be posted yet")  # a 5xx: Alertmanager sends it again
        if incident_id is not None:
            self.store.record_posted(ref.channel, ref.ts, POSTED_KIND, incident_id, alert.engine)
        return bool(getattr(result, "is_new", True))

    def _resolve(self, am: AmAlert) -> bool:
        note = "resolved in Alertmanager"
        incident_id = self.store.resolve_active(
            self.signature(am), am.engine_kind or "unknown", self.target(am), BY, note
        )
        if incident_id is None:
            return False  # never opened here, or already resolved (a repeated notification)
        ref = self._posted(incident_id)
        if ref is not None and self.notifier is not None:
            alert = self._alert(am, incident_id).resolved(am.ends_at or datetime.now(UTC), note)
            self.notifier.resolve(ref, alert)
        return True

    def _posted(self, incident_id: int) -> MessageRef | None:
        posted = self.store.find_posted(incident_id=incident_id, kind=POSTED_KIND)
        return MessageRef(posted.channel, posted.ts) if posted is not None else None

    # -- the message ------------------------------------------------------------------------

    def _alert(self, am: AmAlert, incident_id: int | None) -> Alert:
        """The alert message; with the triage answer attached when it names an engine and a known
        state (a health state, or a failure the triager recognises in the annotations)."""
        from triage_bot.health.monitor import kb_text

        title, recovery, faq = am.name, "", ""
        signature_id = self.signature(am)
        kind, state = am.engine_kind, am.state
        if kind is not None and state is not None:
            values = {
                "engine": am.instance,
                "kind": kind,
                **({"model": am.labels["model"]} if "model" in am.labels else {}),
            }
            signature_id = SIGNATURES[state]
            title, recovery, faq = kb_text(signature_id, kind, values)
        elif kind is not None and self.triager is not None:
            answer = self.triager.triage(am.text)
            match = answer.match
            if match is not None and match.confidence >= self.min_confidence:
                signature_id, title, recovery, faq = match.id, match.title, answer.recovery, answer.faq
        return Alert(
            engine=am.instance,
            kind=kind or "alert",
            state=am.name,
            signature_id=signature_id,
            title=title,
            message=am.summary,
            opened_at=am.starts_at,
            incident_id=incident_id,
            severity=am.severity,
            recovery=recovery,
            faq=faq,
            values={"fingerprint": am.fingerprint},
        )
