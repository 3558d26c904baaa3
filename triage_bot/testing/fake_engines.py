"""Local stand-ins for vLLM, SGLang, trtllm-serve and Triton, shipped like click's test runner.

Each fake listens on its own 127.0.0.1 port and answers exactly what the real server answers per
`../shared/reference/engine_endpoints.md`: the same paths and status codes, empty or plain-text
bodies where the real one has them, and Prometheus pages produced by prometheus_client itself
(sorted labels, `_total` suffixes, `_created` series where the engine runs single-process), so a
probe that passes here parses the real thing. vLLM comes in three metric generations ("new":
0.11+, only `kv_cache_usage_perc`; "both": 0.9.2-0.10; "old": 0.9.1 and before, only
`gpu_cache_usage_perc`). Counters advance with wall-clock time, as real ones do.

Every fake can be switched at any time to a failure mode (`Mode`): refused (the listener is
closed), hang, 503, slow drip, garbage body, a 50 MB body, metrics missing, KV saturation, queue
starvation, stuck generation, flapping, preemption storm, request failures. Each records the
method and path of every request, so tests can assert that the bot only ever reads.

    with FakeEngines() as fakes:
        engine = fakes.add("vllm", name="llama-prod")
        engine.set_mode(Mode.STUCK)
        ... check engine.base_url ...

`python -m triage_bot.testing.fake_engines --count 1000` serves a fleet from a separate process (the
benchmark uses it) and prints one JSON line with every base URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import os
import random
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import generate_latest

HOST = "127.0.0.1"
KINDS = ("vllm", "sglang", "trtllm", "triton")
HUGE_BODY_BYTES = 50 * 1024 * 1024

TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
SGLANG_TTFT_BUCKETS = (
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    2.0,
    4.0,
    6.0,
    8.0,
    10.0,
    20.0,
    40.0,
    60.0,
    80.0,
    100.0,
    200.0,
    400.0,
)


class Mode(enum.StrEnum):
    HEALTHY = "healthy"
    REFUSED = "refused"
    HANG = "hang"
    HTTP_503 = "503"
    SLOW_DRIP = "slow_drip"
    GARBAGE = "garbage"
    HUGE_BODY = "huge_body"
    METRICS_MISSING = "metrics_missing"
    KV_SATURATED = "kv_saturated"
    STARVATION = "starvation"
    STUCK = "stuck"
    FLAPPING = "flapping"
    PREEMPTION_STORM = "preemption_storm"
    FAILURES = "failures"


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str | None = "text/plain; charset=utf-8"
    delay: float = 0.0  # seconds before answering (SGLang's health takes ~1 s, 20 s when stuck)
    hang: bool = False
    drip: float = 0.0  # seconds between single bytes of the whole response
    huge: int = 0  # stream this many bytes, chunked, no Content-Length


def _json(status: int, obj: Any) -> Reply:
    return Reply(status, json.dumps(obj, separators=(",", ":")).encode(), "application/json")


class _Families:
    """An object with collect(), which is all generate_latest() needs."""

    def __init__(self, families: list[Any]):
        self.families = families

    def collect(self) -> Iterable[Any]:
        return self.families


@dataclass
class Load:
    """The engine's current readings; counters advance by rate × elapsed time on every read."""

    running: float = 8.0
    waiting: float = 0.0
    kv: float = 0.27
    tokens_per_s: float = 400.0
    preemptions_per_s: float = 0.0
    requests_per_s: float = 4.0
    abort_share: float = 0.0


@dataclass
class FakeEngine:
    kind: str
    name: str
    model: str = "meta-llama/Llama-3.1-8B-Instruct"
    generation: str = "new"  # vLLM metric generation: new | both | old
    label_set: str = "new"  # SGLang labels: new (engine_type, tp_rank, pp_rank) | old (model_name only)
    sglang_health_delay: float = 1.0  # a healthy SGLang /health takes about a second
    sglang_health_timeout: float = 20.0  # SGLANG_HEALTH_CHECK_TIMEOUT
    stats_wait: float = 2.0  # trtllm-serve /metrics blocks up to ~2 s when no iteration is queued
    drip_interval: float = 0.2
    perf_metrics: bool = False  # trtllm-serve with return_perf_metrics: Prometheus at /prometheus/metrics
    flap_every: int = 1  # flapping: switch between healthy and 503 every this many health requests
    mode: Mode = Mode.HEALTHY
    port: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    # counters
    gen_tokens: float = 27453.0
    prompt_tokens: float = 184320.0
    preemptions: float = 0.0
    finished: dict[str, float] = field(default_factory=lambda: {"stop": 120.0, "length": 11.0, "abort": 0.0})
    iteration: int = 1000
    _last_advance: float = field(default_factory=time.monotonic)
    _pending_iters: float = 0.0
    _health_count: int = 0
    _server: asyncio.AbstractServer | None = None
    _owner: FakeEngines | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # ------------------------------------------------------------------ control

    def set_mode(self, mode: Mode | str) -> None:
        """Switch failure mode; REFUSED closes the listener, leaving it re-opens on the same port."""
        mode = Mode(mode)
        self.advance()
        self.mode = mode
        self._health_count = 0
        if self._owner is not None:
            self._owner._call(self._apply_listener())

    def load(self) -> Load:
        m = self.mode
        if m is Mode.KV_SATURATED:
            return Load(running=24, waiting=6, kv=0.98, preemptions_per_s=0.0)
        if m is Mode.STARVATION:
            return Load(running=0, waiting=40, kv=0.05, tokens_per_s=0.0, requests_per_s=0.0)
        if m is Mode.STUCK:
            return Load(running=4, waiting=3, kv=0.31, tokens_per_s=0.0, requests_per_s=0.0)
        if m is Mode.PREEMPTION_STORM:
            return Load(running=30, waiting=12, kv=0.93, preemptions_per_s=20.0)
        if m is Mode.FAILURES:
            return Load(requests_per_s=50.0, abort_share=0.4)
        return Load()

    def advance(self) -> None:
        now = time.monotonic()
        dt = max(0.0, now - self._last_advance)
        self._last_advance = now
        load = self.load()
        self.gen_tokens += load.tokens_per_s * dt
        self.prompt_tokens += load.tokens_per_s * 3 * dt
        self.preemptions += load.preemptions_per_s * dt
        done = load.requests_per_s * dt
        self.finished["abort"] += done * load.abort_share
        self.finished["stop"] += done * (1 - load.abort_share) * 0.9
        self.finished["length"] += done * (1 - load.abort_share) * 0.1
        if load.tokens_per_s > 0 or self.mode is Mode.STARVATION:
            self._pending_iters += (
                dt * 20.0
            )  # the executor iterates while it generates, or spins on a blocked queue

    # ------------------------------------------------------------------ routing

    async def _apply_listener(self) -> None:
        if self.mode is Mode.REFUSED:
            if self._server is not None:
                self._server.close()
                self._server = None
                if self._owner is not None:
                    self._owner._drop_connections(self)
        elif self._server is None:
            self._server = await asyncio.start_server(
                self._client_connected,
                HOST,
                self.port,
                reuse_address=True,
            )
            self.port = self._server.sockets[0].getsockname()[1]

    def _client_connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
        assert self._owner is not None
        return self._owner._serve(self, reader, writer)

    def reply(self, method: str, path: str, body: bytes) -> Reply:
        self.requests.append((method, path))
        path = path.split("?", 1)[0]
        m = self.mode
        if m is Mode.HANG:
            return Reply(200, hang=True)
        if m is Mode.SLOW_DRIP:
            inner = self._route(method, path, body, Mode.HEALTHY)
            inner.drip = self.drip_interval
            return inner
        return self._route(method, path, body, m)

    def _is_health(self, path: str) -> bool:
        return path in ("/health", "/health_generate", "/v2/health/ready", "/v2/health/live")

    def _route(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if m is Mode.FLAPPING and self._is_health(path):
            if path in ("/health", "/v2/health/ready"):  # one flip per check, not per request
                self._health_count += 1
            bad = self._health_count > 0 and ((self._health_count - 1) // self.flap_every) % 2 == 1
            return self._unhealthy(path) if bad else self._healthy_health(path)
        if m is Mode.FLAPPING:
            m = Mode.HEALTHY
        if m is Mode.HTTP_503:
            return self._unhealthy(path)
        if m is Mode.GARBAGE:
            rnd = random.Random(len(self.requests))
            junk = b"<html><body>502 Bad Gateway</body></html>\n\x00\xff\xfe" + rnd.randbytes(512)
            return Reply(200, junk, "text/html")
        if m is Mode.HUGE_BODY and not self._is_health(path):
            return Reply(200, content_type="text/plain; version=0.0.4; charset=utf-8", huge=HUGE_BODY_BYTES)
        handler = getattr(self, f"_{self.kind}", None)
        if handler is None:
            return _json(404, {"detail": "Not Found"})
        reply: Reply = handler(method, path, body, m)
        return reply

    def _healthy_health(self, path: str) -> Reply:
        if self.kind == "sglang":
            return Reply(200, b"", None, delay=self.sglang_health_delay)
        if self.kind == "trtllm" and path == "/health_generate":
            return Reply(200, b"Generation health check OK")
        return Reply(200, b"", None)

    def _unhealthy(self, path: str) -> Reply:
        if self.kind == "vllm":
            return Reply(503, b"", None)  # EngineDeadError: 503 with an empty body (500 before ~0.11)
        if self.kind == "sglang":
            return Reply(503, b"", None)  # gracefully exiting / starting: an immediate 503
        if self.kind == "trtllm":
            if path == "/health_generate":
                return Reply(500, b"Generation health check failed")
            return Reply(503, b"LLM is unavailable. Please check the server logs for more details.")
        return Reply(400, b"", None)  # Triton: not ready is 400 with an empty body

    # ------------------------------------------------------------------ vLLM

    def _models_body(self, owned_by: str) -> dict[str, Any]:
        card: dict[str, Any] = {
            "id": self.model,
            "object": "model",
            "created": int(self.created),
            "owned_by": owned_by,
        }
        if owned_by == "vllm":
            card |= {
                "root": self.model,
                "parent": None,
                "max_model_len": 131072,
                "permission": [
                    {
                        "id": "modelperm-3f2c9d0e8b7a4c1d9e6f5a4b3c2d1e0f",
                        "object": "model_permission",
                        "created": int(self.created),
                        "allow_create_engine": False,
                        "allow_sampling": True,
                        "allow_logprobs": True,
                        "allow_search_indices": False,
                        "allow_view": True,
                        "allow_fine_tuning": False,
                        "organization": "*",
                        "group": None,
                        "is_blocking": False,
                    }
                ],
            }
        elif owned_by == "sglang":
            card |= {"root": self.model, "parent": None, "max_model_len": 131072}
        return {"object": "list", "data": [card]}

    def _vllm(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path == "/health":
            return Reply(200, b"", None)  # a hung engine core still answers 200 here
        if path == "/version":
            return _json(200, {"version": "0.9.1" if self.generation == "old" else "0.11.0"})
        if path == "/v1/models":
            return _json(200, self._models_body("vllm"))
        if path.startswith("/metrics"):
            if m is Mode.METRICS_MISSING:
                return self._prom(
                    self._vllm_no_stats()
                )  # --disable-log-stats: only http_* and process metrics
            return self._prom(self._vllm_metrics())
        if path == "/v1/completions" and method == "POST":
            if m is Mode.STUCK:
                return Reply(200, hang=True)
            return _json(
                200,
                {
                    "id": "cmpl-fake",
                    "object": "text_completion",
                    "created": int(time.time()),
                    "model": self.model,
                    "choices": [{"index": 0, "text": " pong", "logprobs": None, "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 1, "total_tokens": 2, "completion_tokens": 1},
                },
            )
        return _json(404, {"detail": "Not Found"})

    def _prom(self, families: list[Any]) -> Reply:
        return Reply(200, generate_latest(_Families(families)), "text/plain; version=0.0.4; charset=utf-8")

    def _vllm_labels(self) -> tuple[list[str], list[str]]:
        if self.generation == "old":
            return ["model_name"], [self.model]
        return ["model_name", "engine"], [self.model, "0"]

    def _vllm_metrics(self) -> list[Any]:
        self.advance()
        load = self.load()
        names, values = self._vllm_labels()
        out: list[Any] = []

        def gauge(name: str, doc: str, value: float) -> None:
            fam = GaugeMetricFamily(name, doc, labels=names)
            fam.add_metric(values, value)
            out.append(fam)

        def counter(name: str, doc: str, value: float) -> None:
            fam = CounterMetricFamily(name, doc, labels=names)
            fam.add_metric(values, value, created=self.created)
            out.append(fam)

        gauge("vllm:num_requests_running", "Number of requests in model execution batches.", load.running)
        gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", load.waiting)
        if self.generation in ("new", "both"):
            gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", load.kv)
        if self.generation in ("old", "both"):
            doc = "GPU KV-cache usage. 1 means 100 percent usage."
            if self.generation == "both":
                doc += " DEPRECATED: Use vllm:kv_cache_usage_perc instead."
            gauge("vllm:gpu_cache_usage_perc", doc, load.kv)
        prefix = "vllm:gpu_prefix_cache" if self.generation == "old" else "vllm:prefix_cache"
        counter(
            f"{prefix}_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            self.prompt_tokens,
        )
        counter(
            f"{prefix}_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            self.prompt_tokens / 3,
        )
        counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", self.preemptions)
        counter("vllm:prompt_tokens", "Number of prefill tokens processed.", self.prompt_tokens)
        counter("vllm:generation_tokens", "Number of generation tokens processed.", self.gen_tokens)
        success = CounterMetricFamily(
            "vllm:request_success",
            "Count of successfully processed requests.",
            labels=[*names, "finished_reason"],
        )
        for reason in ("stop", "length", "abort"):
            success.add_metric([*values, reason], round(self.finished[reason]), created=self.created)
        out.append(success)
        count = sum(self.finished.values())
        for name, doc, buckets in (
            (
                "vllm:time_to_first_token_seconds",
                "Histogram of time to first token in seconds.",
                TTFT_BUCKETS,
            ),
            (
                "vllm:inter_token_latency_seconds"
                if self.generation != "old"
                else "vllm:time_per_output_token_seconds",
                "Histogram of inter-token latency in seconds.",
                ITL_BUCKETS,
            ),
        ):
            hist = HistogramMetricFamily(name, doc, labels=names)
            cumulative = [(_le(b), round(count * min(1.0, (i + 1) / 8))) for i, b in enumerate(buckets)]
            hist.add_metric(values, buckets=[*cumulative, ("+Inf", round(count))], sum_value=count * 0.05)
            out.append(hist)
        if self.generation == "new":
            sleep = GaugeMetricFamily(
                "vllm:engine_sleep_state",
                "Engine sleep state; awake = 0 means engine is sleeping",
                labels=[*names, "sleep_state"],
            )
            for state, v in (("awake", 1.0), ("weights_offloaded", 0.0), ("discard_all", 0.0)):
                sleep.add_metric([*values, state], v)
            out.append(sleep)
        out.extend(self._vllm_no_stats())
        return out

    def _vllm_no_stats(self) -> list[Any]:
        http = CounterMetricFamily(
            "http_requests_total",
            "Total number of requests by method, status and handler.",
            labels=["handler", "method", "status"],
        )
        http.add_metric(["/v1/completions", "POST", "2xx"], round(sum(self.finished.values())))
        gc = CounterMetricFamily(
            "python_gc_objects_collected", "Objects collected during gc", labels=["generation"]
        )
        for g in ("0", "1", "2"):
            gc.add_metric([g], 1234.0)
        return [http, gc]

    # ------------------------------------------------------------------ SGLang

    def _sglang(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path in ("/health", "/health_generate"):
            if m is Mode.STUCK:
                return Reply(503, b"", None, delay=self.sglang_health_timeout)
            return self._healthy_health(path)
        if path == "/ping":
            return Reply(200, b"", None)  # SageMaker ping: always 200, checks nothing
        if path == "/v1/models":
            return _json(200, self._models_body("sglang"))
        if path == "/get_model_info":
            return _json(
                200,
                {
                    "model_path": self.model,
                    "tokenizer_path": self.model,
                    "is_generation": True,
                    "preferred_sampling_params": None,
                    "weight_version": "default",
                },
            )
        if path == "/metrics":
            if m is Mode.METRICS_MISSING:
                return _json(404, {"detail": "Not Found"})  # launched without --enable-metrics
            return self._prom(self._sglang_metrics())
        return _json(404, {"detail": "Not Found"})

    def _sglang_metrics(self) -> list[Any]:
        self.advance()
        load = self.load()
        if self.label_set == "old":
            sched_names, sched_values = ["model_name"], [self.model]
            tok_names, tok_values = ["model_name"], [self.model]
        else:
            sched_names = ["model_name", "engine_type", "tp_rank", "pp_rank"]
            sched_values = [self.model, "unified", "0", "0"]
            tok_names, tok_values = ["model_name", "engine_type"], [self.model, "unified"]
        out: list[Any] = []

        def gauge(name: str, doc: str, value: float, extra: dict[str, str] | None = None) -> None:
            extra = extra or {}
            fam = GaugeMetricFamily(name, doc, labels=[*sched_names, *extra])
            fam.add_metric([*sched_values, *extra.values()], value)
            out.append(fam)

        def counter(name: str, doc: str, value: float) -> None:
            fam = CounterMetricFamily(name, doc, labels=tok_names)  # multiprocess registry: no _created
            fam.add_metric(tok_values, value)
            out.append(fam)

        gauge("sglang:num_running_reqs", "The number of running requests.", load.running)
        gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", load.waiting)
        gauge("sglang:token_usage", "The token usage.", load.kv)
        gauge("sglang:num_used_tokens", "The number of used tokens.", round(load.kv * 520000))
        gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", 520000)
        gauge("sglang:gen_throughput", "The generation throughput (token/s).", load.tokens_per_s)
        gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", 0.0075)
        gauge(
            "sglang:num_retracted_reqs", "The number of retracted requests.", 0.0, {"pid": str(os.getpid())}
        )
        counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", self.prompt_tokens)
        counter("sglang:generation_tokens_total", "Number of generation tokens processed.", self.gen_tokens)
        counter(
            "sglang:num_retracted_requests_total", "Total number of retracted requests.", self.preemptions
        )
        counter(
            "sglang:num_requests_total", "Number of requests processed.", round(sum(self.finished.values()))
        )
        counter(
            "sglang:num_aborted_requests_total", "Number of requests aborted.", round(self.finished["abort"])
        )
        hist = HistogramMetricFamily(
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            labels=tok_names,
        )
        count = round(sum(self.finished.values()))
        hist.add_metric(
            tok_values,
            buckets=[*((_le(b), count) for b in SGLANG_TTFT_BUCKETS), ("+Inf", count)],
            sum_value=count * 0.2,
        )
        out.append(hist)
        return out

    # ------------------------------------------------------------------ trtllm-serve

    def _trtllm(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path == "/health":
            return Reply(200, b"", None)
        if path == "/health_generate":
            if m is Mode.STUCK:
                return Reply(200, hang=True)  # no server-side timeout: a hung engine hangs this request
            return Reply(200, b"Generation health check OK")
        if path == "/version":
            return _json(200, {"version": "1.2.0"})
        if path == "/v1/models":
            return _json(200, self._models_body("tensorrt_llm"))
        if path == "/metrics":
            if m is Mode.METRICS_MISSING:
                return _json(404, {"detail": "Not Found"})
            return self._trtllm_stats()
        if path == "/prometheus/metrics":
            if not self.perf_metrics or m is Mode.METRICS_MISSING:
                return _json(404, {"detail": "Not Found"})  # mounted only with return_perf_metrics
            return self._prom(self._trtllm_prometheus())
        return _json(404, {"detail": "Not Found"})

    def _trtllm_stats(self) -> Reply:
        self.advance()
        n = min(int(self._pending_iters), 50)
        self._pending_iters -= int(self._pending_iters)
        if n == 0:
            return Reply(200, b"[]", "application/json", delay=self.stats_wait)  # drained: idle or stuck
        load = self.load()
        stats = []
        for _ in range(n):
            self.iteration += 1
            used = round(6239 * load.kv)
            stats.append(
                {
                    "cpuMemUsage": 0,
                    "gpuMemUsage": 56401920000,
                    "inflightBatchingStats": {
                        "avgNumDecodedTokensPerIter": 1.0,
                        "microBatchId": 0,
                        "numContextRequests": 0,
                        "numCtxTokens": 0,
                        "numGenRequests": int(load.running),
                        "numPausedRequests": int(load.preemptions_per_s * 3),
                        "numScheduledRequests": int(load.running),
                    },
                    "iter": self.iteration,
                    "iterLatencyMS": 16.505143404006958,
                    "kvCacheStats": {
                        "allocNewBlocks": 12,
                        "allocTotalBlocks": 40,
                        "cacheHitRate": 0.3,
                        "freeNumBlocks": 6239 - used,
                        "maxNumBlocks": 6239,
                        "missedBlocks": 28,
                        "reusedBlocks": 12,
                        "tokensPerBlock": 32,
                        "usedNumBlocks": used,
                    },
                    "maxBatchSizeRuntime": 2048,
                    "maxBatchSizeStatic": 2048,
                    "maxBatchSizeTunerRecommended": 0,
                    "maxNumActiveRequests": 2048,
                    "newActiveRequestsQueueLatencyMS": 0.0007503032684326172,
                    "numActiveRequests": int(load.running),
                    "numCompletedRequests": 0,
                    "numNewActiveRequests": 0,
                    "numQueuedRequests": int(load.waiting),
                    "pinnedMemUsage": 0,
                    "staticBatchingStats": None,
                    "timestamp": time.strftime("%m-%d-%Y %H:%M:%S"),
                }
            )
        return _json(200, stats)

    def _trtllm_prometheus(self) -> list[Any]:
        self.advance()
        load = self.load()
        names, values = ["model_name", "engine_type"], ["undefined", "undefined"]
        pid = str(os.getpid())
        out: list[Any] = []
        for name, doc, value in (
            ("trtllm_num_requests_running", "Number of active requests", load.running),
            ("trtllm_num_requests_waiting", "Number of queued requests", load.waiting),
            ("trtllm_kv_cache_utilization", "KV cache utilization", load.kv),
            ("trtllm_num_paused_requests", "Number of paused requests", load.preemptions_per_s * 3),
        ):
            fam = GaugeMetricFamily(name, doc, labels=[*names, "pid"])  # multiprocess gauges carry pid
            fam.add_metric([*values, pid], value)
            out.append(fam)
        success = CounterMetricFamily(
            "trtllm_request_success",
            "Count of successfully processed requests.",
            labels=[*names, "finished_reason"],
        )
        for reason in ("stop", "length"):
            success.add_metric([*values, reason], round(self.finished[reason]))
        out.append(success)
        for name, doc, value in (
            ("trtllm_generation_tokens", "Number of generation tokens processed.", self.gen_tokens),
            ("trtllm_request_error", "Count of failed requests.", round(self.finished["abort"])),
        ):
            counter = CounterMetricFamily(name, doc, labels=names)
            counter.add_metric(values, value)
            out.append(counter)
        return out

    # ------------------------------------------------------------------ Triton

    def _triton(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path in ("/v2/health/ready", "/v2/health/live"):
            return Reply(200, b"", None)
        if path == "/metrics":
            if m is Mode.METRICS_MISSING:
                return Reply(404, b"", None)
            return Reply(200, self._triton_metrics(), "text/plain; charset=utf-8")
        if path.startswith("/v2/models/") and path.endswith("/ready"):
            return Reply(200, b"", None)
        return _json(404, {"error": "Not Found"})

    def _triton_metrics(self) -> bytes:
        self.advance()
        load = self.load()
        it = int(self.gen_tokens / 10)
        lab = 'model="tensorrt_llm",version="1"'
        ok, fail = round(self.finished["stop"] + self.finished["length"]), round(self.finished["abort"])
        return "\n".join(
            [
                "# HELP nv_inference_request_success Number of successful inference requests, all batch sizes",
                "# TYPE nv_inference_request_success counter",
                f"nv_inference_request_success{{{lab}}} {ok}",
                "# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes",
                "# TYPE nv_inference_request_failure counter",
                f"nv_inference_request_failure{{{lab}}} {fail}",
                "# HELP nv_inference_pending_request_count Instantaneous number of pending requests awaiting execution per-model.",
                "# TYPE nv_inference_pending_request_count gauge",
                f"nv_inference_pending_request_count{{{lab}}} {int(load.waiting)}",
                "# HELP nv_trt_llm_request_metrics TRT LLM request metrics",
                "# TYPE nv_trt_llm_request_metrics gauge",
                f'nv_trt_llm_request_metrics{{model="tensorrt_llm",request_type="waiting",version="1"}} {int(load.waiting)}',
                f'nv_trt_llm_request_metrics{{model="tensorrt_llm",request_type="scheduled",version="1"}} {int(load.running)}',
                f'nv_trt_llm_request_metrics{{model="tensorrt_llm",request_type="active",version="1"}} {int(load.running)}',
                "# HELP nv_trt_llm_kv_cache_block_metrics TRT LLM KV cache block metrics",
                "# TYPE nv_trt_llm_kv_cache_block_metrics gauge",
                f'nv_trt_llm_kv_cache_block_metrics{{kv_cache_block_type="fraction",model="tensorrt_llm",version="1"}} {load.kv}',
                'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="tensorrt_llm",version="1"} 6239',
                "# HELP nv_trt_llm_general_metrics General TRT LLM metrics",
                "# TYPE nv_trt_llm_general_metrics gauge",
                f'nv_trt_llm_general_metrics{{general_type="iteration_counter",model="tensorrt_llm",version="1"}} {it}',
                "",
            ]
        ).encode()


def _le(bound: float) -> str:
    return repr(float(bound))


class FakeEngines:
    """Hosts any number of fake engines on one asyncio loop in a background thread."""

    def __init__(self) -> None:
        self.engines: list[FakeEngine] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-engines", daemon=True)
        self._conns: dict[int, set[asyncio.StreamWriter]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._started = False

    def __enter__(self) -> FakeEngines:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if not self._started:
            self._thread.start()
            self._started = True

    def stop(self) -> None:
        if not self._started:
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._started = False

    def _call(self, coro: Any) -> Any:
        if threading.current_thread() is self._thread:
            return asyncio.ensure_future(coro)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=30)

    def add(
        self, kind: str, name: str | None = None, mode: Mode | str = Mode.HEALTHY, **options: Any
    ) -> FakeEngine:
        if kind not in KINDS:
            raise ValueError(f"unknown fake kind {kind!r}; one of {KINDS}")
        self.start()
        engine = FakeEngine(kind=kind, name=name or f"{kind}-{len(self.engines)}", mode=Mode(mode), **options)
        engine._owner = self
        self.engines.append(engine)
        if engine.mode is Mode.REFUSED:  # reserve a port that nothing listens on
            engine.mode = Mode.HEALTHY
            self._call(engine._apply_listener())
            engine.set_mode(Mode.REFUSED)
        else:
            self._call(engine._apply_listener())
        return engine

    def add_many(self, kind: str, count: int, **options: Any) -> list[FakeEngine]:
        return [self.add(kind, **options) for _ in range(count)]

    async def _shutdown(self) -> None:
        for engine in self.engines:
            if engine._server is not None:
                engine._server.close()
                engine._server = None
        for writers in self._conns.values():
            for writer in list(writers):
                writer.close()
        for task in list(self._tasks):
            task.cancel()

    def _drop_connections(self, engine: FakeEngine) -> None:
        for writer in list(self._conns.get(id(engine), ())):
            writer.close()

    async def _serve(
        self, engine: FakeEngine, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        conns = self._conns.setdefault(id(engine), set())
        conns.add(writer)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    method, target, _version = line.decode("latin-1").split()
                except ValueError:
                    break
                headers: dict[str, str] = {}
                while True:
                    hline = await reader.readline()
                    if hline in (b"\r\n", b"\n", b""):
                        break
                    key, _, value = hline.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = b""
                if headers.get("content-length", "").isdigit():
                    body = await reader.readexactly(int(headers["content-length"]))
                reply = engine.reply(method, target, body)
                keep = await self._send(writer, reply)
                if not keep or headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError, OSError):
            pass
        finally:
            conns.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        if reply.hang:
            await asyncio.Event().wait()  # until the client goes away or the fakes stop
        if reply.delay:
            await asyncio.sleep(reply.delay)
        reason = {
            200: "OK",
            400: "Bad Request",
            404: "Not Found",
            500: "Internal Server Error",
            503: "Service Unavailable",
        }.get(reply.status, "Status")
        head = [
            f"HTTP/1.1 {reply.status} {reason}",
            "server: uvicorn",
            f"date: {time.strftime('%a, %d %b %Y %H:%M:%S GMT', time.gmtime())}",
        ]
        if reply.content_type:
            head.append(f"content-type: {reply.content_type}")
        if reply.huge:
            head.append("transfer-encoding: chunked")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            chunk = (b"# filler to make a very large page\n" * 2000)[: 64 * 1024]
            sent = 0
            while sent < reply.huge:
                piece = chunk[: min(len(chunk), reply.huge - sent)]
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                sent += len(piece)
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        head.append(f"content-length: {len(reply.body)}")
        raw = ("\r\n".join(head) + "\r\n\r\n").encode() + reply.body
        if reply.drip:
            for i in range(len(raw)):
                writer.write(raw[i : i + 1])
                await writer.drain()
                await asyncio.sleep(reply.drip)
            return True
        writer.write(raw)
        await writer.drain()
        return True


def main(argv: list[str] | None = None) -> None:
    """Serve a fleet of fakes until stdin closes; print {"engines": [{name, kind, base_url, mode}]}."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument(
        "--kinds", default="vllm,sglang,trtllm", help="comma-separated kinds, used round-robin"
    )
    parser.add_argument("--modes", default="healthy", help="comma-separated modes, used round-robin")
    parser.add_argument("--sglang-health-delay", type=float, default=1.0)
    parser.add_argument("--stats-wait", type=float, default=2.0)
    parser.add_argument("--cpu", type=int, default=None, help="pin this process to one CPU")
    args = parser.parse_args(argv)
    if args.cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * args.count + 256)), hard))
    kinds = args.kinds.split(",")
    modes = args.modes.split(",")
    fakes = FakeEngines()
    fakes.start()
    out = []
    for i in range(args.count):
        kind = kinds[i % len(kinds)]
        engine = fakes.add(
            kind,
            name=f"{kind}-{i}",
            mode=modes[i % len(modes)],
            sglang_health_delay=args.sglang_health_delay,
            stats_wait=args.stats_wait,
        )
        out.append({"name": engine.name, "kind": kind, "base_url": engine.base_url, "mode": str(engine.mode)})
    print(json.dumps({"engines": out}), flush=True)
    try:
        sys.stdin.read()
    finally:
        fakes.stop()


if __name__ == "__main__":
    main()
