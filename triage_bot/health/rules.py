"""The rules: which bad states one check shows, given what the previous check saw.

Each rule is a small function of (observation, memory, thresholds) returning a Finding or None;
the states module decides when a run of findings becomes an incident. Counter rates need two
reads, so the first check after start-up can only judge gauges. Messages are the exact lines the
bot writes into alerts and history, and the health.* signatures in knowledge/health.yaml match
them, so a person who pastes an alert back into /triage gets the same recovery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from triage_bot.health.config import Thresholds
from triage_bot.health.observation import MetricsSnapshot, Observation

SIGNATURES: dict[str, str] = {
    "down": "health.engine_down",
    "stuck": "health.stuck_generation",
    "kv_cache_saturated": "health.kv_cache_saturated",
    "queue_starvation": "health.queue_starvation",
    "preemption_storm": "health.preemption_storm",
    "request_failure_rate_high": "health.request_failure_rate_high",
    "metrics_missing": "health.metrics_missing",
    "flapping": "health.flapping",
}
STATES: tuple[str, ...] = tuple(SIGNATURES)
SEVERITY: dict[str, str] = {
    "down": "critical",
    "stuck": "critical",
    "kv_cache_saturated": "medium",
    "queue_starvation": "high",
    "preemption_storm": "medium",
    "request_failure_rate_high": "high",
    "metrics_missing": "low",
    "flapping": "high",
}
# states during which the engine does not serve: they count as "down" in the uptime figures
SERVING_LOST = frozenset({"down", "stuck"})


@dataclass(frozen=True)
class Finding:
    state: str
    message: str
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def signature_id(self) -> str:
        return SIGNATURES[self.state]


@dataclass
class EngineMemory:
    """What the previous checks of one engine left behind for rates and drain-on-read sources."""

    last: MetricsSnapshot | None = None
    last_at: datetime | None = None
    known_running: float | None = None
    known_waiting: float | None = None

    def remember(self, obs: Observation) -> None:
        if obs.metrics is not None:
            m = obs.metrics
            if m.running is not None or m.waiting is not None:
                self.known_running, self.known_waiting = m.running, m.waiting
            elif m.progressed is False:
                pass  # an empty drain says nothing new about the queue: keep the last known values
            self.last, self.last_at = m, obs.checked_at


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _n(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}"


def _since(mem: EngineMemory, obs: Observation) -> str:
    """ "since the last check 3 min ago": how long the counter has stood still, which is what the
    on-call engineer weighs against a slow prefill (seconds) or a wedged engine (minutes)."""
    if mem.last_at is None:
        return "since the last check"
    seconds = max(0.0, (obs.checked_at - mem.last_at).total_seconds())
    ago = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
    return f"since the last check {ago} ago"


def rule_down(obs: Observation, mem: EngineMemory, th: Thresholds) -> Finding | None:
    if obs.reachable:
        return None
    return Finding(
        "down", f"engine {obs.engine} is down: {obs.detail}", {"reason": obs.health, "detail": obs.detail}
    )


def rule_stuck(obs: Observation, mem: EngineMemory, th: Thresholds) -> Finding | None:
    if obs.health == "stuck":
        return Finding(
            "stuck", f"engine {obs.engine} is stuck: {obs.detail}", {"reason": "health_generation"}
        )
    if obs.generate == "failed":
        return Finding(
            "stuck",
            f"engine {obs.engine} is stuck: generation probe failed: {obs.generate_detail}",
            {"reason": "probe"},
        )
    m, prev = obs.metrics, mem.last
    if m is None or m.sleeping or obs.generation_verified or obs.generate == "ok":
        return None
    if m.progressed is False:  # drain-on-read: no iteration at all since the previous read
        # queued requests cannot leave the queue without an iteration (a finishing request can)
        queued = mem.known_waiting or 0
        if queued > 0:
            return Finding(
                "stuck",
                f"engine {obs.engine} is stuck: no iterations {_since(mem, obs)} while {_n(queued)} requests wait",
                {"reason": "no_iterations", "waiting": queued},
            )
        return None
    if prev is None or m.progress is None or prev.progress is None or m.progress < prev.progress:
        return None  # first read, no counter, or the counter reset (a restart): cannot judge
    pending = (m.running or 0) + (m.waiting or 0)
    if m.progress == prev.progress and pending > 0:
        return Finding(
            "stuck",
            f"engine {obs.engine} is stuck: {m.progress_metric} flat {_since(mem, obs)} while "
            f"{_n(m.waiting)} requests wait and {_n(m.running)} run",
            {"reason": "flat_counter", "running": m.running, "waiting": m.waiting},
        )
    return None


def rule_metrics_missing(obs: Observation, mem: EngineMemory, th: Thresholds) -> Finding | None:
    if not obs.reachable or obs.metrics_error is None:
        return None
    return Finding(
        "metrics_missing",
        f"engine {obs.engine} metrics missing: {obs.metrics_error}",
        {"detail": obs.metrics_error},
    )


def rule_kv(obs: Observation, mem: EngineMemory, th: Thresholds) -> Finding | None:
    m = obs.metrics
    if m is None or m.sleeping or m.kv_usage is None or m.kv_usage < th.kv_cache:
        return None
    return Finding(
        "kv_cache_saturated",
        f"engine {obs.engine} KV cache is saturated: {_pct(m.kv_usage)} used (threshold {_pct(th.kv_cache)})",
        {"kv_usage": round(m.kv_usage, 4), "kv_metric": m.kv_metric, "waiting": m.waiting},
    )


def rule_starvation(obs: Observation, mem: EngineMemory, th: Thresholds) -> Finding | None:
    m = obs.metrics
    if m is None or m.sleeping or m.waiting is None or m.running is None:
        return None
    if m.waiting > th.waiting and m.running == 0:
        return Finding(
            "queue_starvation",
            f"engine {obs.engine} queue starvation: {_n(m.waiting)} requests waiting, 0 running",
            {"waiting": m.waiting, "running": 0},
        )
    return None


def _minutes_since(mem: EngineMemory, obs: Observation) -> float | None:
    if mem.last_at is None:
        return None
    minutes = (obs.checked_at - mem.last_at).total_seconds() / 60.0
    return minutes if minutes > 0 else None


def rule_preemption(obs: Observation, mem: EngineMemory, th: Thresholds) -> Finding | None:
    m, prev = obs.metrics, mem.last
    minutes = _minutes_since(mem, obs)
    if m is None or minutes is None:
        return None
    count: float | None = None
    if m.preemptions_total is not None and prev is not None and prev.preemptions_total is not None:
        if m.preemptions_total >= prev.preemptions_total:
            count = m.preemptions_total - prev.preemptions_total
    elif m.preemptions_interval is not None:
        count = m.preemptions_interval
    if count is None:
        return None
    rate = count / minutes
    if rate < th.preemptions_per_min:
        return None
    return Finding(
        "preemption_storm",
        f"engine {obs.engine} preemption storm: {rate:.0f} preemptions per minute (threshold {th.preemptions_per_min:g})",
        {"per_min": round(rate, 2), "kv_usage": m.kv_usage},
    )


def rule_failures(obs: Observation, mem: EngineMemory, th: Thresholds) -> Finding | None:
    m, prev = obs.metrics, mem.last
    if m is None or prev is None or m.failed_total is None or m.finished_total is None:
        return None
    if prev.failed_total is None or prev.finished_total is None:
        return None
    finished = m.finished_total - prev.finished_total
    failed = m.failed_total - prev.failed_total
    if finished < th.failure_min_requests or failed < 0:
        return None
    rate = failed / finished
    if rate < th.failure_rate:
        return None
    return Finding(
        "request_failure_rate_high",
        f"engine {obs.engine} request failure rate high: {_pct(rate)} of {finished:.0f} requests failed "
        f"since the last check (threshold {_pct(th.failure_rate)})",
        {"failure_rate": round(rate, 4), "finished": finished, "failed": failed},
    )


Rule = Callable[[Observation, EngineMemory, Thresholds], Finding | None]
RULES: tuple[Rule, ...] = (
    rule_stuck,
    rule_metrics_missing,
    rule_kv,
    rule_starvation,
    rule_preemption,
    rule_failures,
)


def evaluate(obs: Observation, mem: EngineMemory, th: Thresholds) -> dict[str, Finding]:
    """Every bad state this check shows. Down hides the rest (nothing else can be read)."""
    down = rule_down(obs, mem, th)
    if down is not None:
        return {"down": down}
    findings: dict[str, Finding] = {}
    for rule in RULES:
        finding = rule(obs, mem, th)
        if finding is not None:
            findings[finding.state] = finding
    stuck = findings.get("stuck")
    if stuck is not None and "queue_starvation" in findings and stuck.values.get("reason") == "flat_counter":
        del findings["stuck"]  # waiting with nothing running is the more specific diagnosis
    return findings


def check_state(findings: dict[str, Finding]) -> str:
    """The engine_checks state: up, degraded (serving, with a problem) or down (not serving)."""
    if not findings:
        return "up"
    return "down" if SERVING_LOST & findings.keys() else "degraded"
