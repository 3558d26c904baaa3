"""Probes parse exactly what the engines serve: both vLLM metric generations, both SGLang label sets,
trtllm-serve's draining JSON and its Prometheus page, Triton's label-keyed gauges."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.fleet import FAST, engine_entry
from triage_bot.health.config import parse_engines
from triage_bot.health.poller import Poller
from triage_bot.health.probes import available_kinds
from triage_bot.health.probes._common import NotPrometheus, parse_prometheus
from triage_bot.testing.fake_engines import Mode


def check(fakes_list, **poller):
    config = parse_engines(
        {"engines": [engine_entry(f) for f in fakes_list], **({"poller": poller} if poller else {})}
    )

    async def go():
        p = Poller(config)
        try:
            return await p.check_all()
        finally:
            await p.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("generation", "metric"),
    [
        ("new", "vllm:kv_cache_usage_perc"),
        ("both", "vllm:kv_cache_usage_perc"),
        ("old", "vllm:gpu_cache_usage_perc"),
    ],
)
def test_vllm_reads_both_kv_metric_generations(fakes, generation: str, metric: str) -> None:
    fake = fakes.add("vllm", generation=generation, mode=Mode.KV_SATURATED, **FAST)
    (o,) = check([fake])
    assert o.health == "ok" and o.metrics is not None
    assert o.metrics.kv_usage == pytest.approx(0.98) and o.metrics.kv_metric == metric
    assert o.metrics.running == 24 and o.metrics.waiting == 6
    assert o.generate == "ok"  # the 1-token completion
    assert ("POST", "/v1/completions") in fake.requests


@pytest.mark.parametrize("label_set", ["new", "old"])
def test_sglang_accepts_both_label_sets(fakes, label_set: str) -> None:
    fake = fakes.add("sglang", label_set=label_set, **FAST)
    (o,) = check([fake])
    assert o.health == "ok" and o.generation_verified
    assert o.metrics is not None and o.metrics.running == 8 and o.metrics.kv_usage == pytest.approx(0.27)
    assert ("GET", "/ping") not in fake.requests  # /ping always says 200: never trusted


def test_trtllm_json_drains_and_prometheus_page_also_works(fakes) -> None:
    json_fake = fakes.add("trtllm", **FAST)
    prom_fake = fakes.add("trtllm", perf_metrics=True, **FAST)
    config = parse_engines(
        {
            "engines": [
                engine_entry(json_fake),
                engine_entry(prom_fake, metrics_url=prom_fake.base_url + "/prometheus/metrics"),
            ]
        }
    )

    async def go():
        p = Poller(config)
        try:
            await asyncio.sleep(0.2)  # let iterations queue up (an idle trtllm-serve returns [])
            first = await p.check_all()
            await asyncio.sleep(0.2)
            return first, await p.check_all()
        finally:
            await p.aclose()

    (a1, b1), (a2, _) = asyncio.run(go())
    assert a1.metrics is not None and a1.metrics.source == "trtllm-json" and a1.metrics.kv_usage is not None
    assert (
        a2.metrics is not None and a2.metrics.progress > a1.metrics.progress
    )  # each read sees new iterations only
    assert (
        b1.metrics is not None and b1.metrics.source == "prometheus" and b1.metrics.failed_total is not None
    )


def test_a_50_mb_body_is_abandoned_at_the_cap(fakes) -> None:
    fake = fakes.add("vllm", mode=Mode.HUGE_BODY, **FAST)
    (o,) = check([fake], max_body_bytes=1024 * 1024)
    assert o.health == "ok" and o.metrics is None and "cap" in (o.metrics_error or "")


def test_kinds_are_the_probe_modules() -> None:
    assert available_kinds() == ("sglang", "triton", "trtllm", "vllm")


def test_prometheus_parsing_ignores_created_and_rejects_garbage() -> None:
    text = (
        "# HELP vllm:num_preemptions_total x\n# TYPE vllm:num_preemptions_total counter\n"
        'vllm:num_preemptions_total{engine="0",model_name="m"} 3.0\n'
        'vllm:num_preemptions_created{engine="0",model_name="m"} 1.7e+09\n'
        'vllm:num_preemptions_total{engine="1",model_name="m"} 2.0\n'
    )
    s = parse_prometheus(text, ["vllm:num_preemptions"])
    assert s.total("vllm:num_preemptions_total") == 5.0  # data-parallel ranks add up
    with pytest.raises(NotPrometheus):
        parse_prometheus("<html>502 Bad Gateway</html>", ["vllm:"])
