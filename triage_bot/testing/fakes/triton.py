"""The Triton fake (TensorRT-LLM backend): /v2/health/ready and /live (400 with an empty body
when not ready), the model's ready endpoint, and Triton's own Prometheus text at /metrics.
"""

from __future__ import annotations

from triage_bot.testing.fake_engines import FakeEngine, Mode, Reply, json_reply


class Fake(FakeEngine):
    def health_bad(self, path: str) -> Reply:
        return Reply(400, b"", None)  # Triton: not ready is 400 with an empty body

    def serve(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path in ("/v2/health/ready", "/v2/health/live"):
            return Reply(200, b"", None)
        if path == "/metrics":
            if m is Mode.METRICS_MISSING:
                return Reply(404, b"", None)
            return Reply(200, self._triton_metrics(), "text/plain; charset=utf-8")
        if path.startswith("/v2/models/") and path.endswith("/ready"):
            return Reply(200, b"", None)
        return json_reply(404, {"error": "Not Found"})

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


FAKE = Fake
