"""Hysteresis and flapping: when a run of bad checks becomes an incident, and when it ends.

- A state opens after N (`consecutive`) bad checks in a row and resolves after M (`recover`) good
  ones, so one slow scrape or a restart blip does not page anyone.
- A state that could not be judged this time (everything but "down" while the engine is down; the
  metric states while /metrics is unreadable) neither counts as bad nor as good: an engine that
  goes down with a full KV cache does not get a "KV cache recovered" message.
- Flapping: each check is good or bad overall; more than K flips within the last `flap_window`
  checks opens one "flapping" incident and holds back new incidents for that engine until the
  flips fall to K/2 or fewer (the gap stops it from toggling at the boundary).
- Maintenance windows hold back openings (checks still count, so an engine still down when the
  window ends opens on the next check). Mutes are applied where alerts are sent.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from triage_bot.health.config import Thresholds
from triage_bot.health.observation import Observation
from triage_bot.health.rules import STATES, Finding

UPDATE_EVERY = 5  # an open incident's message is refreshed at most every this many checks

TransitionKind = Literal["open", "update", "resolve"]


@dataclass(frozen=True)
class Transition:
    kind: TransitionKind
    engine: str
    state: str
    finding: Finding  # for "resolve", the last bad finding
    at: datetime
    since: datetime | None = None  # when the incident opened


@dataclass
class Track:
    bad: int = 0
    good: int = 0
    open: bool = False
    since: datetime | None = None
    last: Finding | None = None
    posted_message: str | None = None
    checks_since_update: int = 0


def judged_states(obs: Observation, findings: dict[str, Finding]) -> set[str]:
    """The states this check could tell good from bad."""
    if "down" in findings:
        return {"down"}
    states = {"down", "metrics_missing"}
    has_metrics = obs.metrics is not None
    if has_metrics or obs.generate is not None or obs.generation_verified or obs.health == "stuck":
        states.add("stuck")
    if has_metrics:
        states |= {"kv_cache_saturated", "queue_starvation", "preemption_storm", "request_failure_rate_high"}
    return states


@dataclass
class EngineTracker:
    engine: str
    thresholds: Thresholds
    tracks: dict[str, Track] = field(default_factory=dict)
    window: deque[bool] = field(default_factory=deque)
    flapping: bool = False
    current: dict[str, Finding] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.window = deque(maxlen=self.thresholds.flap_window)
        for state in STATES:
            self.tracks.setdefault(state, Track())

    @property
    def flips(self) -> int:
        w = list(self.window)
        return sum(1 for a, b in itertools.pairwise(w) if a != b)

    def open_states(self) -> list[str]:
        return [s for s, t in self.tracks.items() if t.open]

    def restore_open(self, state: str, since: datetime, message: str) -> None:
        """Adopt an incident another replica (or an earlier run) opened, so it can still resolve."""
        track = self.tracks[state]
        track.open, track.since = True, since
        track.bad = max(track.bad, self.thresholds.consecutive)
        track.last = Finding(state, message)
        track.posted_message = message
        if state == "flapping":
            self.flapping = True

    def step(
        self, findings: dict[str, Finding], judged: set[str], now: datetime, *, maintenance: bool = False
    ) -> list[Transition]:
        th = self.thresholds
        self.current = findings
        out: list[Transition] = []
        self.window.append(bool(findings))
        flips = self.flips
        flap = self.tracks["flapping"]
        flap_finding = Finding(
            "flapping",
            f"engine {self.engine} is flapping: {flips} changes between healthy and unhealthy in the last {len(self.window)} checks",
            {"flips": flips, "window": len(self.window)},
        )
        if not self.flapping and flips > th.flap_transitions and not maintenance:
            self.flapping = True
            flap.open, flap.since, flap.last, flap.posted_message = (
                True,
                now,
                flap_finding,
                flap_finding.message,
            )
            out.append(Transition("open", self.engine, "flapping", flap_finding, now, now))
        elif self.flapping and flips <= th.flap_transitions // 2:
            self.flapping = False
            flap.open = False
            out.append(
                Transition("resolve", self.engine, "flapping", flap.last or flap_finding, now, flap.since)
            )
        elif self.flapping:
            flap.last = flap_finding
            flap.checks_since_update += 1
            if flap_finding.message != flap.posted_message and flap.checks_since_update >= UPDATE_EVERY:
                flap.posted_message, flap.checks_since_update = flap_finding.message, 0
                out.append(Transition("update", self.engine, "flapping", flap_finding, now, flap.since))

        for state in STATES:
            if state == "flapping" or state not in judged:
                continue
            track = self.tracks[state]
            finding = findings.get(state)
            if finding is not None:
                track.bad += 1
                track.good = 0
                track.last = finding
                track.checks_since_update += 1
                if not track.open:
                    if track.bad >= th.consecutive and not self.flapping and not maintenance:
                        track.open, track.since, track.posted_message, track.checks_since_update = (
                            True,
                            now,
                            finding.message,
                            0,
                        )
                        out.append(Transition("open", self.engine, state, finding, now, now))
                elif finding.message != track.posted_message and track.checks_since_update >= UPDATE_EVERY:
                    track.posted_message, track.checks_since_update = finding.message, 0
                    out.append(Transition("update", self.engine, state, finding, now, track.since))
            else:
                track.good += 1
                track.bad = 0
                if track.open and track.good >= th.recover:
                    track.open = False
                    out.append(
                        Transition(
                            "resolve", self.engine, state, track.last or Finding(state, ""), now, track.since
                        )
                    )
        return out
