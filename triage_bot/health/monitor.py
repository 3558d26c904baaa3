"""The health-check job: poll, judge, remember, and turn state changes into incidents and alerts.

One `HealthMonitor` lives on the replica that holds the scheduler's leadership, so its in-memory
hysteresis sees every check in order. What must survive a failover lives in the history: every
check (`engine_checks`, for uptime), every incident, and the Slack message of each alert
(`posted_messages`). A new leader adopts the incidents that are still open, so they resolve and
their alerts are edited in place rather than posted twice.

Health incidents are recorded with `engine` = the engine kind (vllm, sglang, ...), like pasted
errors, and `target` = the instance name from engines.yaml; checks are recorded per instance.
The database or Slack being away never stops a pass: history writes spool, and a failed post is
retried on the next check for as long as the incident stays open.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from triage_bot import metrics
from triage_bot.health.alerts import Alert, MessageRef, Notifier
from triage_bot.health.config import EnginesFile
from triage_bot.health.observation import Observation
from triage_bot.health.poller import Poller, utcnow
from triage_bot.health.rules import (
    SERVING_LOST,
    SEVERITY,
    SIGNATURES,
    EngineMemory,
    Finding,
    check_state,
    evaluate,
)
from triage_bot.health.states import EngineTracker, Transition, judged_states

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore

log = logging.getLogger(__name__)

BY = "health-check"
HEARTBEAT = timedelta(minutes=10)  # an open incident gets a fresh occurrence this often (keeps it active)
STATE_OF = {sig: state for state, sig in SIGNATURES.items()}


@dataclass
class OpenIncident:
    state: str
    incident_id: int | None
    alert: Alert | None
    ref: MessageRef | None = None
    muted: bool = False
    last_recorded: datetime | None = None


@dataclass
class EngineStatus:
    """What `triage-bot check --json` prints and /triage status shows for one engine."""

    name: str
    kind: str
    state: str  # up | degraded | down
    findings: dict[str, str]
    open_incidents: list[str]
    maintenance: str | None
    observation: Observation
    transitions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        obs = self.observation
        metrics = None
        if obs.metrics is not None:
            m = obs.metrics
            metrics = {
                k: getattr(m, k)
                for k in (
                    "source",
                    "running",
                    "waiting",
                    "kv_usage",
                    "kv_metric",
                    "progress",
                    "progress_metric",
                    "preemptions_total",
                    "sleeping",
                )
            }
        return {
            "name": self.name,
            "kind": self.kind,
            "state": self.state,
            "findings": [
                {"state": s, "signature_id": SIGNATURES[s], "message": msg}
                for s, msg in self.findings.items()
            ],
            "open_incidents": self.open_incidents,
            "maintenance": self.maintenance,
            "health": obs.health,
            "detail": obs.detail,
            "http_status": obs.health_status,
            "generate": obs.generate,
            "metrics_error": obs.metrics_error,
            "metrics": metrics,
            "elapsed_ms": round(obs.elapsed_s * 1000, 1),
            "checked_at": obs.checked_at.isoformat(),
            "transitions": self.transitions,
        }


def kb_text(signature_id: str, kind: str, values: dict[str, Any]) -> tuple[str, str, str]:
    """(title, recovery, faq) from the knowledge base; the alert still goes out if the KB is unusable."""
    try:
        from triage_bot.answer import render_recovery
        from triage_bot.core import default_triager

        kb = default_triager().kb
        sig = kb.get(signature_id)
        if sig is None:
            return signature_id, "", ""
        from triage_bot.health.probes import engine_of

        engine = engine_of(kind)
        recovery, _ = render_recovery(sig, values, engine)
        return sig.title, recovery, sig.faq
    except Exception as exc:  # the knowledge base is validated at start-up; this is a last resort
        log.warning("knowledge base unavailable for %s: %s", signature_id, exc)
        return signature_id, "", ""


class HealthMonitor:
    def __init__(
        self,
        config: EnginesFile,
        *,
        store: HistoryStore | None = None,
        notifier: Notifier | None = None,
        clock: Any = utcnow,
        poller: Poller | None = None,
    ):
        self.config = config
        self.store = store
        self.notifier = notifier
        self.clock = clock
        self.poller = poller or Poller(config, clock=clock)
        self.memory: dict[str, EngineMemory] = {e.name: EngineMemory() for e in config.engines}
        self.trackers: dict[str, EngineTracker] = {
            e.name: EngineTracker(e.name, e.thresholds) for e in config.engines
        }
        self.incidents: dict[tuple[str, str], OpenIncident] = {}
        self.passes = 0
        self._restored = store is None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ running

    def run_once_sync(self) -> list[EngineStatus]:
        """One pass from a plain thread (the scheduler's); one event loop is kept for keep-alive."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(self.run_once())

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.run_until_complete(self.poller.aclose())
            self._loop.close()
        self._loop = None

    async def run_once(self) -> list[EngineStatus]:
        if not self._restored:
            self._restore()
        observations = await self.poller.check_all()
        statuses = [self._process(obs) for obs in observations]
        self.passes += 1
        return statuses

    # ------------------------------------------------------------------ judging

    def _process(self, obs: Observation) -> EngineStatus:
        engine = self._engine_index()[obs.engine]
        mem, tracker = self.memory[obs.engine], self.trackers[obs.engine]
        findings = evaluate(obs, mem, engine.thresholds)
        judged = judged_states(obs, findings)
        mem.remember(obs)
        window = self.config.in_maintenance(obs.engine, obs.checked_at)
        transitions = tracker.step(findings, judged, obs.checked_at, maintenance=window is not None)
        state = check_state(findings)
        metrics.PROBES.labels(obs.engine, state).inc()
        metrics.PROBE_SECONDS.labels(obs.engine).observe(obs.elapsed_s)
        self._record_check(obs, state, findings, window is not None)
        for t in transitions:
            try:
                self._apply(t, engine.kind, obs)
            except Exception:  # one engine's alert failing must not stop the others
                log.exception("health: handling %s %s for %s failed", t.kind, t.state, t.engine)
        self._heartbeat(obs, engine.kind, tracker)
        return EngineStatus(
            name=obs.engine,
            kind=engine.kind,
            state=state,
            findings={s: f.message for s, f in findings.items()},
            open_incidents=tracker.open_states(),
            maintenance=(window.reason or "maintenance") if window is not None else None,
            observation=obs,
            transitions=[f"{t.kind}:{t.state}" for t in transitions],
        )

    def _engine_index(self) -> dict[str, Any]:
        index = getattr(self, "_index", None)
        if index is None:
            index = self._index = {e.name: e for e in self.config.engines}
        return index

    def _record_check(
        self, obs: Observation, state: str, findings: dict[str, Finding], maintenance: bool
    ) -> None:
        if self.store is None:
            return
        details: dict[str, Any] = {"health": obs.health, "detail": obs.detail[:200]}
        if findings:
            details["findings"] = sorted(findings)
            # the most serious finding in words: a stuck engine answers its /health with 200, so
            # the probe's own detail alone would read as healthy
            worst = min(findings, key=lambda s: (s not in SERVING_LOST, s))
            details["state"] = worst
            details["summary"] = findings[worst].message[:300]
        if obs.metrics is not None:
            m = obs.metrics
            details["metrics"] = {
                k: v
                for k, v in (("running", m.running), ("waiting", m.waiting), ("kv", m.kv_usage))
                if v is not None
            }
        if obs.metrics_error:
            details["metrics_error"] = obs.metrics_error[:200]
        if maintenance:
            details["maintenance"] = True
        try:
            self.store.record_check(
                obs.engine, state, latency_ms=obs.elapsed_s * 1000, details=details, checked_at=obs.checked_at
            )
        except Exception as exc:
            log.warning("health: could not record the check of %s: %s", obs.engine, exc)

    # ------------------------------------------------------------------ incidents and alerts

    def _apply(self, t: Transition, kind: str, obs: Observation) -> None:
        key = (t.engine, t.state)
        if t.kind == "open":
            self._open(t, kind)
        elif t.kind == "update":
            inc = self.incidents.get(key)
            if inc is None:
                return
            self._record_occurrence(t.finding, kind, t.engine, t.at, inc)
            if inc.alert is not None:
                inc.alert = replace(
                    inc.alert, message=t.finding.message, values={**inc.alert.values, **t.finding.values}
                )
                self._deliver(inc)
        else:
            inc = self.incidents.pop(key, None)
            if inc is None:
                return
            note = f"healthy again for {self.trackers[t.engine].thresholds.recover} checks"
            if t.state == "flapping":
                note = "stopped flapping"
            if self.store is not None:
                try:
                    if inc.incident_id is not None:
                        self.store.resolve(inc.incident_id, BY, note, t.at)
                    else:  # it was opened while the database was away (spooled): find it by fingerprint
                        self.store.resolve_active(SIGNATURES[t.state], kind, t.engine, BY, note)
                except Exception as exc:
                    log.warning("health: could not resolve %s/%s: %s", t.engine, t.state, exc)
            if inc.alert is not None and self.notifier is not None and not inc.muted:
                resolved = inc.alert.resolved(t.at, note)
                if inc.ref is None:
                    return  # never got posted (Slack was away the whole time): nothing to resolve
                try:
                    self.notifier.resolve(inc.ref, resolved)
                except Exception as exc:
                    log.warning("health: could not post the resolution of %s/%s: %s", t.engine, t.state, exc)

    def _open(self, t: Transition, kind: str) -> None:
        sig = SIGNATURES[t.state]
        values = {"engine": t.engine, "kind": kind, **t.finding.values}
        engine = self._engine_index()[t.engine]
        if engine.model:
            values.setdefault("model", engine.model)
        values.setdefault("base_url", engine.base_url.rstrip("/"))  # the commands use the configured URL
        title, recovery, faq = kb_text(sig, kind, values)
        inc = OpenIncident(t.state, None, None)
        result = self._record_occurrence(t.finding, kind, t.engine, t.at, inc)
        inc.alert = Alert(
            engine=t.engine,
            kind=kind,
            state=t.state,
            signature_id=sig,
            title=title,
            message=t.finding.message,
            severity=SEVERITY[t.state],
            opened_at=t.at,
            incident_id=inc.incident_id,
            recovery=recovery,
            faq=faq,
            values=values,
        )
        if result is not None and not getattr(result, "is_new", True) and inc.incident_id is not None:
            ref = self._find_ref(inc.incident_id)  # an incident another replica opened and announced
            if ref is not None:
                inc.ref = ref
        self.incidents[(t.engine, t.state)] = inc
        self._deliver(inc)

    def _record_occurrence(
        self, finding: Finding, kind: str, engine: str, at: datetime, inc: OpenIncident
    ) -> Any:
        if self.store is None:
            return None
        from triage_bot.history import Sighting

        try:
            result = self.store.record(
                Sighting(
                    signature_id=SIGNATURES[finding.state],
                    engine=kind,
                    target=engine,
                    severity=SEVERITY[finding.state],
                    source="health",
                    excerpt=finding.message,
                    values={k: v for k, v in finding.values.items() if v is not None},
                    seen_at=at,
                )
            )
        except Exception as exc:
            log.warning("health: could not record %s for %s: %s", finding.state, engine, exc)
            return None
        inc.last_recorded = at
        if getattr(result, "incident_id", None) is not None:
            inc.incident_id = result.incident_id
        if getattr(result, "muted", False):
            inc.muted = True
        return result

    def _find_ref(self, incident_id: int) -> MessageRef | None:
        if self.store is None:
            return None
        try:
            posted = self.store.find_posted(incident_id=incident_id, kind="health_alert")
        except Exception:
            return None
        return MessageRef(posted.channel, posted.ts) if posted is not None else None

    def _deliver(self, inc: OpenIncident) -> None:
        """Post the alert, or edit it in place; a failed post is retried on the next check."""
        if self.notifier is None or inc.alert is None or inc.muted:
            return
        if inc.ref is not None:
            self.notifier.update(inc.ref, inc.alert)
            return
        ref = self.notifier.post(inc.alert)
        if ref is None:
            return
        inc.ref = ref
        if self.store is not None:
            try:
                self.store.record_posted(
                    ref.channel, ref.ts, "health_alert", inc.incident_id, inc.alert.engine
                )
            except Exception as exc:
                log.warning("health: could not remember alert %s: %s", ref.ts, exc)

    def _heartbeat(self, obs: Observation, kind: str, tracker: EngineTracker) -> None:
        for state in tracker.open_states():
            inc = self.incidents.get((obs.engine, state))
            if inc is None:
                continue
            if inc.alert is not None and inc.ref is None and not inc.muted and self.notifier is not None:
                try:
                    self._deliver(inc)  # Slack was away when it opened
                except Exception as exc:
                    log.warning("health: alert for %s/%s still not posted: %s", obs.engine, state, exc)
            finding = tracker.tracks[state].last
            if (
                finding is not None
                and inc.last_recorded is not None
                and obs.checked_at - inc.last_recorded >= HEARTBEAT
            ):
                self._record_occurrence(finding, kind, obs.engine, obs.checked_at, inc)

    def _restore(self) -> None:
        """Adopt health incidents that are still open (opened by an earlier leader or run)."""
        assert self.store is not None
        try:
            rows = self.store.history(status="active", limit=10_000)
        except Exception as exc:
            log.warning("health: cannot read open incidents yet (%s); will retry next pass", exc)
            return
        names = self._engine_index()
        for row in rows:
            state = STATE_OF.get(row.signature_id)
            if row.source != "health" or state is None or row.target not in names or row.status == "resolved":
                continue
            message = (
                f"engine {row.target}: {row.signature_id} (open since {row.first_seen:%Y-%m-%d %H:%M} UTC)"
            )
            self.trackers[row.target].restore_open(state, row.first_seen, message)
            kind = names[row.target].kind
            configured = names[row.target]
            title, recovery, faq = kb_text(
                row.signature_id,
                kind,
                {"engine": row.target, "kind": kind, "base_url": configured.base_url.rstrip("/")}
                | ({"model": configured.model} if configured.model else {}),
            )
            inc = OpenIncident(
                state,
                row.id,
                Alert(
                    engine=row.target,
                    kind=kind,
                    state=state,
                    signature_id=row.signature_id,
                    title=title,
                    message=message,
                    severity=row.severity,
                    opened_at=row.first_seen,
                    incident_id=row.id,
                    recovery=recovery,
                    faq=faq,
                ),
                muted=row.status == "muted",
                last_recorded=row.last_seen,
            )
            inc.ref = self._find_ref(row.id)
            self.incidents[(row.target, state)] = inc
        self._restored = True
