"""The bot's own Prometheus metrics, served at `/metrics` (prometheus_client's text format).

Why one module: every series the bot exports is declared here, with its labels, so the dashboard
and alert rules have one page to read (docs/operations.md lists them) and no module invents a
name. Counters and histograms are process-wide, as in any instrumented service; the gauges that
describe live state (outbox, spool, leadership) are read at scrape time from the objects that
own it (`watch`), never cached, and a source that cannot answer reports NaN instead of failing
the scrape. Nothing here knows about Slack: the adapters name their surface in a label.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from triage_bot import core
from triage_bot.answer import Answer

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

EVENTS_RECEIVED = Counter(
    "triage_events_received",
    "Requests from chat that reached a listener, by surface.",
    ["surface"],
    registry=REGISTRY,
)
EVENTS_ACKED = Counter(
    "triage_events_acked",
    "Requests acknowledged to the chat platform, by surface.",
    ["surface"],
    registry=REGISTRY,
)
EVENTS_HANDLED = Counter(
    "triage_events_handled",
    "Requests whose work ran, by surface and outcome: done (replied, or stayed quiet by design), "
    "duplicate (a retry or another replica had it), failed (the work raised).",
    ["surface", "outcome"],
    registry=REGISTRY,
)
ANSWERS = Counter(
    "triage_answers",
    "Triage answers, by tier (specific, family, none) and confidence band.",
    ["tier", "confidence"],
    registry=REGISTRY,
)
MATCH_SECONDS = Histogram(
    "triage_match_seconds",
    "Time to match one paste against the knowledge base.",
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
    registry=REGISTRY,
)
PROBES = Counter(
    "triage_engine_probes",
    "Engine health checks, by engine and the state they found.",
    ["engine", "state"],
    registry=REGISTRY,
)
PROBE_SECONDS = Histogram(
    "triage_engine_probe_seconds",
    "Time one engine health check took.",
    ["engine"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)
CHAT_API_ERRORS = Counter(
    "triage_chat_api_errors",
    "Calls the chat platform did not take, by method and error.",
    ["method", "error"],
    registry=REGISTRY,
)
OUTBOX_DEPTH = Gauge(
    "triage_outbox_depth",
    "Replies waiting to be sent again, by where they wait.",
    ["where"],
    registry=REGISTRY,
)
SPOOL_DEPTH = Gauge(
    "triage_spool_depth", "History records waiting in the spool for the database.", registry=REGISTRY
)
SCHEDULER_LEADER = Gauge(
    "triage_scheduler_leader", "1 while this replica runs the scheduled jobs.", registry=REGISTRY
)

ALERT_HOOKS = Counter(
    "triage_alertmanager_alerts",
    "Alerts received from Alertmanager, by status.",
    ["status"],
    registry=REGISTRY,
)


def confidence_band(confidence: float | None) -> str:
    """Bands the answers are judged by (docs/accuracy.md): high >= 0.8, medium >= 0.5, else low."""
    if confidence is None:
        return "none"
    return "high" if confidence >= 0.8 else "medium" if confidence >= 0.5 else "low"


def _safe(read: Callable[[], float]) -> Callable[[], float]:
    def value() -> float:
        try:
            return float(read())
        except Exception as exc:  # a scrape must not fail because one source is away
            log.debug("metrics: a gauge could not be read: %s", exc)
            return math.nan

    return value


def watch(gauge: Gauge, read: Callable[[], float], **labels: str) -> None:
    """Read `gauge` from `read()` at each scrape (the last object to call this is the one shown)."""
    (gauge.labels(**labels) if labels else gauge).set_function(_safe(read))


def _count_answer(answer: Answer) -> None:
    m = answer.match
    ANSWERS.labels(m.tier if m else "none", confidence_band(m.confidence if m else None)).inc()


core.match_watchers.append(MATCH_SECONDS.observe)
core.answer_watchers.append(_count_answer)


def exposition() -> bytes:
    """The text a Prometheus scrape gets."""
    return generate_latest(REGISTRY)
