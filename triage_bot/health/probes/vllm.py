"""vLLM (`vllm serve`): /health, Prometheus /metrics, and an optional 1-token completion.

/health only reports whether vLLM already knows its engine is dead (503 since about v0.11, 500
before), so a deadlocked engine core still answers 200: a hang shows up only as a flat
`vllm:generation_tokens_total` while requests wait, or as a failing 1-token completion. KV usage
is read from `vllm:kv_cache_usage_perc` and, for 0.9.1 and older, `vllm:gpu_cache_usage_perc`.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import TYPE_CHECKING

from triage_bot.health.observation import MetricsSnapshot, Observation
from triage_bot.health.probes import Http, ProbeError
from triage_bot.health.probes._common import (
    describe_status,
    get_step,
    health_step,
    new_observation,
    parse_prometheus,
)
from triage_bot.health.probes._common import (
    metrics_step as shared_metrics_step,
)

if TYPE_CHECKING:
    from triage_bot.health.config import EngineConfig

KIND = "vllm"
ENGINE = "vllm"
WORDS = ("vllm",)  # what names it in an alert's labels
SUPPORTS_GENERATE = True
DEFAULT_TIMEOUT_S = 5.0

KV_NAMES = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")  # new name first, then the pre-0.9.2 one
WANTED = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    *KV_NAMES,
    "vllm:generation_tokens",
    "vllm:num_preemptions",
    "vllm:request_success",
    "vllm:engine_sleep_state",
)
FAILED_REASONS = ("abort", "error")


def read_metrics(body: bytes) -> MetricsSnapshot:
    s = parse_prometheus(body, WANTED)
    kv, kv_name = s.first_total(*KV_NAMES)
    if kv is not None and kv_name is not None:
        kv = s.maximum(kv_name)  # data-parallel ranks: the fullest one is the one that preempts
    finished = s.total("vllm:request_success_total")
    failed = None
    if finished is not None:
        failed = sum(s.total("vllm:request_success_total", finished_reason=r) or 0.0 for r in FAILED_REASONS)
    awake = s.total("vllm:engine_sleep_state", sleep_state="awake")
    return MetricsSnapshot(
        source="prometheus",
        running=s.total("vllm:num_requests_running"),
        waiting=s.total("vllm:num_requests_waiting"),
        kv_usage=kv,
        kv_metric=kv_name,
        progress=s.total("vllm:generation_tokens_total"),
        progress_metric="vllm:generation_tokens_total",
        preemptions_total=s.total("vllm:num_preemptions_total"),
        finished_total=finished,
        failed_total=failed,
        sleeping=awake is not None and awake == 0,
    )


async def metrics_step(http: Http, engine: EngineConfig, obs: Observation) -> None:
    await shared_metrics_step(
        http,
        engine,
        obs,
        engine.metrics_url or engine.base_url + "/metrics",
        label="/metrics",
        read=read_metrics,
        unreadable="/metrics is not Prometheus text",
        missing="/metrics has no vllm:* engine metrics (started with --disable-log-stats?)",
    )


async def generate_step(http: Http, engine: EngineConfig, obs: Observation) -> None:
    """POST /v1/completions with max_tokens=1: the only non-GET request the bot ever sends."""
    model = engine.model
    if not model:
        response, error = await get_step(http, engine, engine.base_url + "/v1/models")
        try:
            model = (
                json.loads(response.body)["data"][0]["id"] if response is not None and response.ok else None
            )
        except (ValueError, KeyError, IndexError, TypeError):
            model = None
        if not model:  # cannot build the probe: say so, but it is not evidence of a stuck engine
            obs.notes.append(f"generation probe skipped: /v1/models gave no model id ({error or 'bad body'})")
            return
    payload = {"model": model, "prompt": "ping", "max_tokens": 1, "temperature": 0}
    try:
        response = await http.post_json(engine.base_url + "/v1/completions", payload, engine.headers())
    except ProbeError as exc:
        obs.generate, obs.generate_detail = "failed", f"1-token completion: {exc.detail}"
        return
    if response.ok:
        obs.generate, obs.generate_detail = "ok", f"1-token completion HTTP {response.status}"
    else:
        obs.generate, obs.generate_detail = "failed", f"1-token completion {describe_status(response)}"


async def probe(http: Http, engine: EngineConfig, now: datetime) -> Observation:
    obs = new_observation(engine, now)
    await asyncio.gather(health_step(http, engine, obs, "/health"), metrics_step(http, engine, obs))
    if obs.health == "ok" and engine.generate_probe:
        await generate_step(http, engine, obs)
    return obs
