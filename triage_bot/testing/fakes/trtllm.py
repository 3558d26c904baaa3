"""The trtllm-serve fake: /health, /health_generate (hangs with the engine: no server-side
timeout), /version, /v1/models, the JSON iteration stats at /metrics (blocking up to ~2 s when no
iteration is queued) and, with return_perf_metrics, Prometheus at /prometheus/metrics.
"""

from __future__ import annotations

import os
import time
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from triage_bot.testing.fake_engines import FakeEngine, Mode, Reply, json_reply


class Fake(FakeEngine):
    OWNED_BY = "tensorrt_llm"

    def health_ok(self, path: str) -> Reply:
        if path == "/health_generate":
            return Reply(200, b"Generation health check OK")
        return Reply(200, b"", None)

    def health_bad(self, path: str) -> Reply:
        if path == "/health_generate":
            return Reply(500, b"Generation health check failed")
        return Reply(503, b"LLM is unavailable. Please check the server logs for more details.")

    def serve(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path == "/health":
            return Reply(200, b"", None)
        if path == "/health_generate":
            if m is Mode.STUCK:
                return Reply(200, hang=True)  # no server-side timeout: a hung engine hangs this request
            return Reply(200, b"Generation health check OK")
        if path == "/version":
            return json_reply(200, {"version": "1.2.0"})
        if path == "/v1/models":
            return json_reply(200, self.models_body())
        if path == "/metrics":
            if m is Mode.METRICS_MISSING:
                return json_reply(404, {"detail": "Not Found"})
            return self._trtllm_stats()
        if path == "/prometheus/metrics":
            if not self.perf_metrics or m is Mode.METRICS_MISSING:
                return json_reply(404, {"detail": "Not Found"})  # mounted only with return_perf_metrics
            return self.prometheus(self._trtllm_prometheus())
        return json_reply(404, {"detail": "Not Found"})

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
        return json_reply(200, stats)

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


FAKE = Fake
