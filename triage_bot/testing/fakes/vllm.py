"""The vLLM fake (`vllm serve`): /health, /version, /v1/models, the 1-token completion, and
/metrics in three generations ("new": 0.11+, only `kv_cache_usage_perc`; "both": 0.9.2-0.10;
"old": 0.9.1 and before, only `gpu_cache_usage_perc`).

/health answers 200 while the engine core hangs; it answers 503 with an empty body once vLLM knows
its engine is dead (EngineDeadError; 500 before about v0.11).
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from triage_bot.testing.fake_engines import FakeEngine, Mode, Reply, json_reply, le

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


class Fake(FakeEngine):
    OWNED_BY = "vllm"

    def health_bad(self, path: str) -> Reply:
        return Reply(503, b"", None)  # EngineDeadError: 503 with an empty body (500 before ~0.11)

    def model_card(self) -> dict[str, Any]:
        return super().model_card() | {
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

    def serve(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path == "/health":
            return Reply(200, b"", None)  # a hung engine core still answers 200 here
        if path == "/version":
            return json_reply(200, {"version": "0.9.1" if self.generation == "old" else "0.11.0"})
        if path == "/v1/models":
            return json_reply(200, self.models_body())
        if path.startswith("/metrics"):
            if m is Mode.METRICS_MISSING:
                return self.prometheus(
                    self._vllm_no_stats()
                )  # --disable-log-stats: only http_* and process metrics
            return self.prometheus(self._vllm_metrics())
        if path == "/v1/completions" and method == "POST":
            if m is Mode.STUCK:
                return Reply(200, hang=True)
            return json_reply(
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
        return json_reply(404, {"detail": "Not Found"})

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
            cumulative = [(le(b), round(count * min(1.0, (i + 1) / 8))) for i, b in enumerate(buckets)]
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


FAKE = Fake
