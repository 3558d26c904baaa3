"""The engines' own start-up dumps fill the recovery command: vLLM's `non-default args: {...}` and
its `with config: ...` line, SGLang's `server_args=ServerArgs(...)`, and command lines. A word of
prose after `vllm serve` is not a model."""

from __future__ import annotations

import pytest

from triage_bot.core import default_triager
from triage_bot.text.extract import global_values

VLLM_ARGS = (
    "(APIServer pid=1) INFO 05-06 10:11:12 [api_server.py:1043] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
    "'model': 'Qwen/Qwen3-8B', 'max_model_len': 32768, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.85}"
)
VLLM_CONFIG = (
    "INFO 10-12 [llm_engine.py:237] Initializing a V0 LLM engine (v0.6.3) with config: model='mistralai/Mistral-7B-v0.3', "
    "speculative_config=None, tokenizer='mistralai/Mistral-7B-v0.3', max_seq_len=8192, tensor_parallel_size=1, "
    "pipeline_parallel_size=1"
)
SGLANG_ARGS = (
    "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', "
    "tokenizer_path='meta-llama/Llama-3.1-8B-Instruct', mem_fraction_static=0.88, context_length=None, tp_size=4, pp_size=1)"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            VLLM_ARGS,
            {
                "model": "Qwen/Qwen3-8B",
                "tp_size": 2,
                "cli_max_model_len": 32768,
                "cli_gpu_memory_utilization": 0.85,
            },
        ),
        (
            VLLM_CONFIG,
            {"model": "mistralai/Mistral-7B-v0.3", "tp_size": 1, "pp_size": 1, "cli_max_model_len": 8192},
        ),
        (
            SGLANG_ARGS,
            {
                "model": "meta-llama/Llama-3.1-8B-Instruct",
                "tp_size": 4,
                "pp_size": 1,
                "cli_mem_fraction_static": 0.88,
            },
        ),
        (
            "vllm serve Qwen/Qwen2.5-7B --tp 2 --max-model-len 4096",
            {"model": "Qwen/Qwen2.5-7B", "tp_size": 2, "cli_max_model_len": 4096},
        ),
        ("I tried vllm serve just like the docs say", {}),  # prose, not a model
        # TensorRT-LLM: trtllm-serve command lines and the LLM API's start-up line, as pasted in real
        # reports (NVIDIA/TensorRT-LLM threads in tests/holdout)
        (
            "trtllm-serve nvidia/DeepSeek-R1-0528-FP4 --max_batch_size 128 --max_num_tokens 163840 "
            "--max_seq_len 163840 --kv_cache_free_gpu_memory_fraction 0.6 --port 8000 --backend pytorch "
            "--tp_size 8 --pp_size 1 --ep_size 8",
            {
                "model": "nvidia/DeepSeek-R1-0528-FP4",
                "tp_size": 8,
                "pp_size": 1,
                "port": 8000,
                "cli_max_model_len": 163840,
            },
        ),
        ("trtllm-serve serve     --tp_size 8 --ep_size 8     --backend pytorch", {"tp_size": 8}),  # no model
        (
            "trtllm-serve nvidia/Kimi-K2.6-NVFP4 --tp_size=4 --backend=pytorch",
            {"model": "nvidia/Kimi-K2.6-NVFP4", "tp_size": 4},
        ),
        (
            "[TRT-LLM] [I] max_seq_len=128, max_num_requests=96, max_num_tokens=96, max_batch_size=96",
            {"cli_max_model_len": 128},
        ),
    ],
)
def test_start_up_dumps_give_the_launch_values(text: str, expected: dict[str, object]) -> None:
    assert global_values(text, default_triager().matcher.value_patterns) == expected


def test_the_launch_commands_come_from_the_engines_headers() -> None:
    """`vllm serve X` names the model because vllm.yaml's header says `launch: [vllm serve]`."""
    assert global_values("vllm serve Qwen/Qwen2.5-7B") == {}  # no knowledge base: no launch command
    assert global_values("vllm serve Qwen/Qwen2.5-7B", default_triager().matcher.value_patterns) == {
        "model": "Qwen/Qwen2.5-7B"
    }


def test_the_recovery_names_the_model_from_the_start_up_line() -> None:
    paste = (
        VLLM_ARGS
        + "\nValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
    )
    answer = default_triager().triage(paste)
    assert answer.match is not None and answer.match.id == "vllm.kv_cache_no_memory"
    assert "vllm serve Qwen/Qwen3-8B" in answer.recovery and "<model>" not in answer.recovery
