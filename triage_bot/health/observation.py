"""What one check of one engine saw, in engine-neutral terms the rules can judge.

Each probe turns its engine's own endpoints and metric names into this shape, so the rules know
nothing about vLLM, SGLang or TensorRT-LLM and a new engine kind never touches them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

# ok: the engine answered healthy; stuck: it answered, but said its own generation check failed
HealthVerdict = Literal["ok", "refused", "timeout", "http_error", "bad_response", "stuck", "error"]
GenerateVerdict = Literal["ok", "failed"]


@dataclass
class MetricsSnapshot:
    """Engine-neutral readings; None means the engine does not expose that reading."""

    source: str  # "prometheus" or "trtllm-json"
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None  # fraction 0..1
    kv_metric: str | None = None  # the metric name it came from (two vLLM generations)
    progress: float | None = None  # monotone counter that moves while the engine generates
    progress_metric: str | None = None
    preemptions_total: float | None = None  # cumulative counter
    preemptions_interval: float | None = None  # count since the previous read (gauge-like sources)
    finished_total: float | None = None
    failed_total: float | None = None
    finished_interval: float | None = None  # drain-on-read sources report per-interval counts
    progressed: bool | None = None  # drain-on-read: did any iteration run since the previous read
    sleeping: bool = False  # vLLM sleep mode is deliberate, not an incident

    @property
    def has_core(self) -> bool:
        """True when at least one of the load readings the rules need is present."""
        return (
            any(v is not None for v in (self.running, self.waiting, self.kv_usage))
            or self.progressed is not None
        )


@dataclass
class Observation:
    engine: str
    kind: str
    checked_at: datetime
    health: HealthVerdict
    detail: str = ""  # short, human: "connection refused", "HTTP 503", "timed out after 5.0 s"
    health_status: int | None = None
    elapsed_s: float = 0.0
    health_elapsed_s: float | None = None
    generate: GenerateVerdict | None = None
    generate_detail: str = ""
    generation_verified: bool = False  # the health check itself generated a token (SGLang default)
    metrics: MetricsSnapshot | None = None
    metrics_error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def reachable(self) -> bool:
        return self.health in ("ok", "stuck")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["checked_at"] = self.checked_at.isoformat()
        return data
