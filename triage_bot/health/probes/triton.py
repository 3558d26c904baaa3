"""NVIDIA Triton with the TensorRT-LLM backend: /v2/health/ready and Prometheus on port 8002.

Triton answers 400 (not 5xx) with an empty body when it is not ready, so any non-2xx is down.
Its metrics are on a separate port (8002 unless `metrics_url` says otherwise); the TRT-LLM gauges
are read by label (`request_type`, `kv_cache_block_type`), and the iteration counter stands in
for a generation counter. There is no generation probe for Triton.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from triage_bot.health.observation import MetricsSnapshot, Observation
from triage_bot.health.probes import Http
from triage_bot.health.probes._common import (
    health_step,
    new_observation,
    parse_prometheus,
)
from triage_bot.health.probes._common import (
    metrics_step as shared_metrics_step,
)

if TYPE_CHECKING:
    from triage_bot.health.config import EngineConfig

KIND = "triton"
ENGINE = None  # Triton's own server: trtllm-serve's commands do not fit it
WORDS = ("triton",)  # what names it in an alert's labels
SUPPORTS_GENERATE = False
DEFAULT_TIMEOUT_S = 5.0
METRICS_PORT = 8002

WANTED = (
    "nv_trt_llm_request_metrics",
    "nv_trt_llm_kv_cache_block_metrics",
    "nv_trt_llm_general_metrics",
    "nv_inference_pending_request_count",
    "nv_inference_request_success",
    "nv_inference_request_failure",
)


def default_metrics_url(base_url: str) -> str:
    parts = urlsplit(base_url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"[{host}]:{METRICS_PORT}" if ":" in host else f"{host}:{METRICS_PORT}"
    return urlunsplit((parts.scheme, netloc, "/metrics", "", ""))


def read_metrics(body: bytes) -> MetricsSnapshot:
    s = parse_prometheus(body, WANTED)
    waiting = s.total("nv_trt_llm_request_metrics", request_type="waiting")
    if waiting is None:
        waiting = s.total("nv_inference_pending_request_count")
    running = s.total("nv_trt_llm_request_metrics", request_type="scheduled")
    if running is None:
        running = s.total("nv_trt_llm_request_metrics", request_type="active")
    kv = s.maximum("nv_trt_llm_kv_cache_block_metrics", kv_cache_block_type="fraction")
    kv_name = "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=fraction}" if kv is not None else None
    if kv is None:
        used = s.total("nv_trt_llm_kv_cache_block_metrics", kv_cache_block_type="used")
        cap = s.total("nv_trt_llm_kv_cache_block_metrics", kv_cache_block_type="max")
        if used is not None and cap:
            kv, kv_name = used / cap, "nv_trt_llm_kv_cache_block_metrics used/max"
    success, failure = s.total("nv_inference_request_success"), s.total("nv_inference_request_failure")
    return MetricsSnapshot(
        source="prometheus",
        running=running,
        waiting=waiting,
        kv_usage=kv,
        kv_metric=kv_name,
        progress=s.total("nv_trt_llm_general_metrics", general_type="iteration_counter"),
        progress_metric="nv_trt_llm_general_metrics{general_type=iteration_counter}",
        finished_total=None if success is None else success + (failure or 0.0),
        failed_total=failure,
    )


async def metrics_step(http: Http, engine: EngineConfig, obs: Observation) -> None:
    await shared_metrics_step(
        http,
        engine,
        obs,
        engine.metrics_url or default_metrics_url(engine.base_url),
        label=f"metrics (:{METRICS_PORT})",
        read=read_metrics,
        unreadable="metrics are not Prometheus text",
        missing="metrics have no nv_trt_llm_* or nv_inference_* readings",
    )


async def probe(http: Http, engine: EngineConfig, now: datetime) -> Observation:
    obs = new_observation(engine, now)
    await asyncio.gather(health_step(http, engine, obs, "/v2/health/ready"), metrics_step(http, engine, obs))
    return obs
