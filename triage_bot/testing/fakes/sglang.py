"""The SGLang fake (`python -m sglang.launch_server`): /health and /health_generate (about a
second when healthy, SGLANG_HEALTH_CHECK_TIMEOUT when stuck), /ping, /v1/models, /get_model_info,
and /metrics with the old or the new label set (only with --enable-metrics).
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from triage_bot.testing.fake_engines import FakeEngine, Mode, Reply, json_reply, le

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


class Fake(FakeEngine):
    OWNED_BY = "sglang"

    def health_ok(self, path: str) -> Reply:
        return Reply(200, b"", None, delay=self.sglang_health_delay)

    def health_bad(self, path: str) -> Reply:
        return Reply(503, b"", None)  # gracefully exiting / starting: an immediate 503

    def model_card(self) -> dict[str, Any]:
        return super().model_card() | {"root": self.model, "parent": None, "max_model_len": 131072}

    def serve(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path in ("/health", "/health_generate"):
            if m is Mode.STUCK:
                return Reply(503, b"", None, delay=self.sglang_health_timeout)
            return self.health_ok(path)
        if path == "/ping":
            return Reply(200, b"", None)  # SageMaker ping: always 200, checks nothing
        if path == "/v1/models":
            return json_reply(200, self.models_body())
        if path == "/get_model_info":
            return json_reply(
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
                return json_reply(404, {"detail": "Not Found"})  # launched without --enable-metrics
            return self.prometheus(self._sglang_metrics())
        return json_reply(404, {"detail": "Not Found"})

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
            buckets=[*((le(b), count) for b in SGLANG_TTFT_BUCKETS), ("+Inf", count)],
            sum_value=count * 0.2,
        )
        out.append(hist)
        return out


FAKE = Fake
