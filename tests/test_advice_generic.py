"""Computed advice for generic.* signatures: one failure, three engines, numbers from the paste.

A generic failure (CUDA OOM, a busy port, a small /dev/shm...) looks the same under every engine;
the engine is detected from the rest of the paste and the recovery is written in that engine's
own flags. Each paste below is a real line from ../shared/corpus/errors.jsonl or fresh.jsonl (the
case id is noted beside it), wrapped in a line or two of engine context where the test is about
the engine. Expected numbers are worked out by hand from the message.

The arithmetic for generic.cuda_oom (knowledge/generic.yaml): sizes are converted to GiB, the
shortfall is (asked - free); the fraction drops by max(5, ceil(shortfall / total * 100 + 2))
points for vLLM and SGLang and by max(10, shortfall / total * 100 + 5 rounded up to a multiple
of 5) points for TensorRT-LLM, starting from the paste's own flag when it has one, else from 0.9 (vLLM default),
0.85 (assumed SGLang value) or 0.9 (TensorRT-LLM default).

The cases that check only the answer's signature, engine, values and pieces of the recovery live
beside their signatures, as examples in knowledge/generic.yaml (checked by `kb lint` and
tests/test_signature_examples.py). The tests left here also check what the recovery must not say
(another engine's flag, a fraction that cannot help), which an example cannot state.
"""

from __future__ import annotations

from triage_bot.core import triage

VLLM_PREFIX = "(VllmWorker rank=0 pid=1) ERROR 03-19 07:27:53 [multiproc_executor.py:375] "
VLLM_CTX = (
    VLLM_PREFIX
    + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1, in execute_model\n'
    + VLLM_PREFIX
)
SGLANG_CTX = (
    "[2025-01-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2011, in run_scheduler_process\n'
)
TRTLLM_CTX = "[TensorRT-LLM] TensorRT-LLM version: 0.19.0\n"

# vllm-099: 1.74 GiB asked, 605.88 MiB (0.5917 GiB) free of 23.57 GiB on GPU 1
# shortfall 1.1483 GiB = 4.87 % of the GPU -> vLLM/SGLang step ceil(6.87) = 7 points,
# TensorRT-LLM step max(10, roundup5(9.87)) = 10 points
OOM_1_74 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.74 GiB. GPU 1 has a total "
    "capacity of 23.57 GiB of which 605.88 MiB is free. Process 133288 has 22.97 GiB memory in use."
)
# gpu-031: a single 135 GiB allocation on a 15.93 GiB card, 0 bytes free
OOM_HUGE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 135.00 GiB. GPU 0 has a total "
    "capacity of 15.93 GiB of which 0 bytes is free."
)


def _answer(text: str, expected_id: str):
    answer = triage(text)
    assert answer.match is not None, f"no match for {text!r}"
    assert answer.match.id == expected_id, (answer.match.id, text)
    return answer


def _commands(answer) -> str:
    return "\n".join(answer.commands)


# -- generic.cuda_oom: the same line under three engines ------------------------------------------


def test_oom_under_vllm_lowers_gpu_memory_utilization_from_the_default() -> None:
    answer = _answer(VLLM_CTX + OOM_1_74, "generic.cuda_oom")
    assert answer.match.engine == "vllm"
    assert "GPU 1" in answer.recovery
    assert "--gpu-memory-utilization 0.83" in _commands(answer)  # 0.90 - 7 points
    assert "--mem-fraction-static" not in answer.recovery
    assert "kv_cache_free_gpu_mem" not in answer.recovery


def test_oom_under_sglang_lowers_mem_fraction_static() -> None:
    answer = _answer(SGLANG_CTX + OOM_1_74, "generic.cuda_oom")
    assert answer.match.engine == "sglang"
    assert "GPU 1" in answer.recovery
    assert "--mem-fraction-static 0.78" in _commands(answer)  # assumed 0.85 - 7 points
    assert "--gpu-memory-utilization" not in answer.recovery


def test_oom_under_trtllm_lowers_kv_cache_free_gpu_mem_fraction() -> None:
    answer = _answer(TRTLLM_CTX + OOM_1_74, "generic.cuda_oom")
    assert answer.match.engine == "trtllm"
    assert "GPU 1" in answer.recovery
    commands = _commands(answer)
    assert "--kv_cache_free_gpu_memory_fraction 0.80" in commands  # trtllm-serve
    assert "kv_cache_free_gpu_mem_fraction:0.80" in commands  # Triton config.pbtxt
    assert "--gpu-memory-utilization" not in answer.recovery


def test_oom_allocation_larger_than_the_gpu_is_not_a_fraction_problem() -> None:
    answer = _answer(VLLM_CTX + OOM_HUGE, "generic.cuda_oom")
    assert "larger than the whole GPU" in answer.recovery
    assert "--gpu-memory-utilization 0." not in _commands(answer)
    assert "--tensor-parallel-size 2" in _commands(answer)
