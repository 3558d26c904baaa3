"""TensorRT-LLM `trtllm-serve`: /health, /health_generate, and /metrics as JSON iteration stats.

/metrics is not Prometheus here: it is a JSON list of the iteration stats queued since the
previous read, so it drains (two pollers would steal each other's stats, one more reason the
checks run on one replica only) and an idle server returns `[]`, after blocking up to ~2 s. The
Prometheus page lives at /prometheus/metrics only with `return_perf_metrics`; point `metrics_url`
there to use it (the body is sniffed, either format works). /health_generate is a GET that
generates one token and has no server-side timeout, so the client deadline bounds it.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from triage_bot.health.observation import MetricsSnapshot, Observation
from triage_bot.health.probes import Http
from triage_bot.health.probes._common import (
    generate_get_step,
    health_step,
    new_observation,
    parse_prometheus,
)
from triage_bot.health.probes._common import (
    metrics_step as shared_metrics_step,
)

if TYPE_CHECKING:
    from triage_bot.health.config import EngineConfig

KIND = "trtllm"
ENGINE = "trtllm"
WORDS = ("trtllm", "tensorrt")  # what names it in an alert's labels
SUPPORTS_GENERATE = True
DEFAULT_TIMEOUT_S = 10.0  # /metrics may block ~2 s on an idle server

WANTED = (
    "trtllm_num_requests_running",
    "trtllm_num_requests_waiting",
    "trtllm_kv_cache_utilization",
    "trtllm_generation_tokens_total",
    "trtllm_num_paused_requests",
    "trtllm_request_success_total",
    "trtllm_request_error_total",
)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def read_json_stats(body: bytes) -> MetricsSnapshot:
    stats = json.loads(body)
    if not isinstance(stats, list) or not all(isinstance(s, dict) for s in stats):
        raise ValueError("expected a JSON list of iteration stats")
    if not stats:
        return MetricsSnapshot(source="trtllm-json", progressed=False)
    latest = max(stats, key=lambda s: _num(s.get("iter")) or 0.0)
    kv = latest.get("kvCacheStats") or {}
    used, maximum = _num(kv.get("usedNumBlocks")), _num(kv.get("maxNumBlocks"))
    paused = [_num((s.get("inflightBatchingStats") or {}).get("numPausedRequests")) or 0.0 for s in stats]
    completed = [_num(s.get("numCompletedRequests")) or 0.0 for s in stats]
    return MetricsSnapshot(
        source="trtllm-json",
        running=_num(latest.get("numActiveRequests")),
        waiting=_num(latest.get("numQueuedRequests")),
        kv_usage=(used / maximum) if used is not None and maximum else None,
        kv_metric="kvCacheStats.usedNumBlocks/maxNumBlocks" if maximum else None,
        progress=_num(latest.get("iter")),
        progress_metric="iter",
        preemptions_interval=max(paused),
        finished_interval=sum(completed),
        progressed=True,
    )


def read_prometheus(body: bytes) -> MetricsSnapshot:
    s = parse_prometheus(body, WANTED)
    success, errors = s.total("trtllm_request_success_total"), s.total("trtllm_request_error_total")
    return MetricsSnapshot(
        source="prometheus",
        running=s.total("trtllm_num_requests_running"),
        waiting=s.total("trtllm_num_requests_waiting"),
        kv_usage=s.maximum("trtllm_kv_cache_utilization"),
        kv_metric="trtllm_kv_cache_utilization" if s.has("trtllm_kv_cache_utilization") else None,
        progress=s.total("trtllm_generation_tokens_total"),
        progress_metric="trtllm_generation_tokens_total",
        preemptions_interval=s.total("trtllm_num_paused_requests"),
        finished_total=None if success is None else success + (errors or 0.0),
        failed_total=errors,
    )


def read_any(body: bytes) -> MetricsSnapshot:
    """trtllm-serve's /metrics is iteration-stats JSON; behind a Prometheus endpoint it is text."""
    return read_json_stats(body) if body.lstrip()[:1] == b"[" else read_prometheus(body)


async def metrics_step(http: Http, engine: EngineConfig, obs: Observation) -> None:
    await shared_metrics_step(
        http,
        engine,
        obs,
        engine.metrics_url or engine.base_url + "/metrics",
        label="metrics",
        read=read_any,
        unreadable="metrics are neither iteration-stats JSON nor Prometheus text",
        missing="metrics have no trtllm request or KV readings",
    )


async def probe(http: Http, engine: EngineConfig, now: datetime) -> Observation:
    obs = new_observation(engine, now)
    await asyncio.gather(health_step(http, engine, obs, "/health"), metrics_step(http, engine, obs))
    if obs.health == "ok" and engine.generate_probe:
        await generate_get_step(http, engine, obs, "/health_generate")
    return obs
