"""SGLang (`sglang.launch_server`): /health runs a 1-token generation, Prometheus /metrics.

By default /health (and always /health_generate) submits a 1-token request and waits up to
SGLANG_HEALTH_CHECK_TIMEOUT (20 s) for any scheduler output: a healthy server answers 200 after
about a second, a stuck one answers 503 after about 20 s. So a 503 that took nearly that long is a
stuck engine, not a dead one, and the client timeout must exceed 20 s (default 30 s here). /ping
always answers 200 and is never used. /metrics exists only with --enable-metrics (404 otherwise),
and its scheduler gauges keep their last value when idle, so "stuck" is never judged on gauges
alone when /health has just generated a token.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING

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

KIND = "sglang"
ENGINE = "sglang"
WORDS = ("sglang",)  # what names it in an alert's labels
SUPPORTS_GENERATE = True
DEFAULT_TIMEOUT_S = 30.0
STUCK_FRACTION = 0.8  # a 503 after this share of SGLang's own health timeout: its generation check failed

WANTED = (
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:generation_tokens_total",
    "sglang:num_retracted_requests_total",
    "sglang:num_retracted_reqs",
    "sglang:num_requests_total",
    "sglang:num_aborted_requests_total",
)


def read_metrics(body: bytes) -> MetricsSnapshot:
    s = parse_prometheus(body, WANTED)
    retract_total = s.total("sglang:num_retracted_requests_total")
    return MetricsSnapshot(
        source="prometheus",
        running=s.total("sglang:num_running_reqs"),
        waiting=s.total("sglang:num_queue_reqs"),
        kv_usage=s.maximum("sglang:token_usage"),
        kv_metric="sglang:token_usage" if s.has("sglang:token_usage") else None,
        progress=s.total("sglang:generation_tokens_total"),
        progress_metric="sglang:generation_tokens_total",
        preemptions_total=retract_total,
        preemptions_interval=None if retract_total is not None else s.total("sglang:num_retracted_reqs"),
        finished_total=s.total("sglang:num_requests_total"),
        failed_total=s.total("sglang:num_aborted_requests_total"),
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
        missing="/metrics has no sglang:* scheduler metrics",
        status_hints={404: "/metrics HTTP 404 (SGLang serves metrics only with --enable-metrics)"},
    )


async def probe(http: Http, engine: EngineConfig, now: datetime) -> Observation:
    obs = new_observation(engine, now)
    response, _ = await asyncio.gather(
        health_step(http, engine, obs, "/health"), metrics_step(http, engine, obs)
    )
    if response is not None:
        if response.ok:
            obs.generation_verified = True  # SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION defaults to on
        elif (
            response.status == 503
            and response.elapsed_s >= STUCK_FRACTION * engine.thresholds.sglang_health_s
        ):
            obs.health = "stuck"
            obs.detail = f"/health HTTP 503 after {response.elapsed_s:.0f} s: no token from the scheduler"
    if obs.health == "ok" and engine.generate_probe:
        await generate_get_step(http, engine, obs, "/health_generate")
    return obs
