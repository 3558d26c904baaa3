"""Computed advice for vLLM signatures: the recovery must carry numbers worked out from the paste.

Each paste below is a real line (or a short excerpt) from ../shared/corpus/errors.jsonl; the case
id is noted beside it. The expected numbers are computed by hand from the message.
"""

from __future__ import annotations

import pytest

from triage_bot.core import triage
from triage_bot.kb.loader import DEFAULT_DIR
from triage_bot.templating import render


def _answer(text: str, expected_id: str):
    answer = triage(text)
    assert answer.match is not None, f"no match for {text!r}"
    assert answer.match.id == expected_id
    return answer


# -- vllm.max_model_len_exceeds_kv_cache: its computed advice is checked by its own examples
# (knowledge/vllm.yaml, tests/test_signature_examples.py)


# -- vllm.startup_free_memory_below_utilization -------------------------------------------------


def test_free_memory_gives_utilization_below_free_over_total() -> None:
    # vllm-012: 3.22 / 4.0 = 0.805; minus 0.02 margin = 0.785 -> 0.78
    text = (
        "(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device "
        "(3.22/4.0 GiB) on startup is less than desired GPU memory utilization (0.9, 3.6 GiB). Decrease GPU "
        "memory utilization or reduce GPU memory used by other processes."
    )
    answer = _answer(text, "vllm.startup_free_memory_below_utilization")
    assert "--gpu-memory-utilization 0.78" in answer.recovery
    assert "0.78" in " ".join(answer.commands)


def test_free_memory_with_device_id() -> None:
    # vllm-010: 19.77 / 22.05 = 0.8966; minus 0.02 = 0.8766 -> 0.87; others hold 2.28 GiB
    text = (
        "[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) ValueError: Free memory on device cuda:1 "
        "(19.77/22.05 GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB). "
        "Decrease GPU memory utilization or reduce GPU memory used by other processes."
    )
    answer = _answer(text, "vllm.startup_free_memory_below_utilization")
    assert "--gpu-memory-utilization 0.87" in answer.recovery
    assert "2.28 GiB" in answer.recovery
    assert "cuda:1" in answer.recovery


# -- vllm.prompt_too_long ---------------------------------------------------------------------


def test_prompt_too_long_v1_states_lengths_and_cut() -> None:
    # vllm-073: 5016 - 4096 = 920 tokens over; --max-model-len 5016 rounded up to 1024 = 5120
    text = "ValueError: Prompt length of 5016 is longer than the maximum model length of 4096."
    answer = _answer(text, "vllm.prompt_too_long")
    assert "5016" in answer.recovery and "4096" in answer.recovery
    assert "920" in answer.recovery
    assert "--max-model-len 5120" in answer.recovery


def test_prompt_too_long_multimodal() -> None:
    # vllm-069: 25938 - 4096 = 21842; 25938 rounded up to 1024 = 26624
    text = (
        "ValueError: The prompt (total length 25938) is too long to fit into the model (context length 4096). "
        "Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens."
    )
    answer = _answer(text, "vllm.prompt_too_long")
    assert "21842" in answer.recovery
    assert "--max-model-len 26624" in answer.recovery


# -- vllm.max_model_len_exceeds_derived -------------------------------------------------------


def test_derived_max_model_len_is_the_suggested_value() -> None:
    # vllm-066
    text = (
        "ValueError: User-specified max_model_len (4096) is greater than the derived max_model_len "
        "(seq_length=2048 or model_max_length=None in model's config.json). This may lead to incorrect "
        "model outputs or CUDA errors."
    )
    answer = _answer(text, "vllm.max_model_len_exceeds_derived")
    assert answer.match.values["derived_len"] == 2048
    assert "--max-model-len 2048" in answer.recovery
    assert "seq_length" in answer.recovery


# -- vllm.tp_heads_not_divisible --------------------------------------------------------------


def test_tp_heads_keeps_all_gpus_with_pipeline_parallelism() -> None:
    # vllm-019: 40 heads, 6 GPUs -> TP 2 (divides 40 and 6) x PP 3; or TP 5 alone
    text = "Total number of attention heads (40) must be divisible by tensor parallel size (6)."
    answer = _answer(text, "vllm.tp_heads_not_divisible")
    assert "--tensor-parallel-size 2 --pipeline-parallel-size 3" in answer.recovery
    assert "--tensor-parallel-size 5" in answer.recovery


def test_tp_heads_eight_gpus() -> None:
    # vllm-017: 52 heads, 8 GPUs -> TP 4 x PP 2
    text = "ValueError: Total number of attention heads (52) must be divisible by tensor parallel size (8)."
    answer = _answer(text, "vllm.tp_heads_not_divisible")
    assert "--tensor-parallel-size 4 --pipeline-parallel-size 2" in answer.recovery


# -- vllm.compute_capability_dtype ------------------------------------------------------------


def test_bf16_on_old_gpu_suggests_half_and_echoes_gpu() -> None:
    # vllm-035
    text = (
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 "
        "GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in "
        "CLI, for example: --dtype=half."
    )
    answer = _answer(text, "vllm.compute_capability_dtype")
    assert answer.match.values["gpu_name"] == "Tesla T4"
    assert "Tesla T4" in answer.recovery and "7.5" in answer.recovery
    assert any(c.endswith("--dtype half") for c in answer.commands)


# -- vllm.sampler_warmup_oom ------------------------------------------------------------------


def test_sampler_warmup_halves_max_num_seqs() -> None:
    # vllm-095
    text = (
        "(VllmWorker rank=0 pid=10672) ERROR 03-16 06:12:38 [multiproc_executor.py:375] RuntimeError: CUDA out "
        "of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering "
        "`max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
    )
    answer = _answer(text, "vllm.sampler_warmup_oom")
    assert "--max-num-seqs 512" in answer.recovery


# -- other signatures whose message carries numbers -------------------------------------------


def test_rpc_timeout_scales_the_printed_timeout() -> None:
    # vllm-090: 5000 ms -> VLLM_RPC_TIMEOUT=30000
    text = "ERROR 10-10 01:53:56 client.py:412] TimeoutError: Server didn't reply within 5000 ms"
    answer = _answer(text, "vllm.timeout_rpc")
    assert "VLLM_RPC_TIMEOUT=30000" in answer.recovery


def test_quantization_capability_is_echoed() -> None:
    # vllm-040
    text = (
        "ValueError: The quantization method fp8 is not supported for the current GPU. "
        "Minimum capability: 90. Current capability: 86."
    )
    answer = _answer(text, "vllm.quantization_unsupported")
    assert "9.0" in answer.recovery and "8.6" in answer.recovery


# -- missing numbers still give a usable command ----------------------------------------------


def test_missing_numbers_render_placeholders() -> None:
    # vllm-097 stops mid-message: the dummy request count is not in the paste
    text = (
        '(Worker pid=226322) ERROR 10-25 13:12:42 [multiproc_executor.py:671]   File "/opt/conda/lib/python3.13/'
        'site-packages/vllm/v1/worker/gpu_model_runner.py", line 3221, in _dummy_sampler_run\n'
        "(Worker pid=226322) ERROR 10-25 13:12:42 [multiproc_executor.py:671]     raise RuntimeError(\n"
        "(Worker pid=226322) ERROR 10-25 13:12:42 [multiproc_executor.py:671] RuntimeError: CUDA out of"
    )
    answer = _answer(text, "vllm.sampler_warmup_oom")
    assert any("--max-num-seqs <" in c for c in answer.commands), answer.commands


def test_truncated_v1_kv_message_renders_a_placeholder_command() -> None:
    # the head of vllm-008, cut before the GiB figures
    text = (
        "ValueError: To serve at least one request with the models's max seq len (1048576), (24.00 GiB KV ca"
    )
    answer = _answer(text, "vllm.max_model_len_exceeds_kv_cache")
    command = next(c for c in answer.commands if "--max-model-len" in c)
    assert "<" in command and ">" in command


# -- templates do not depend on a detected engine ---------------------------------------------


def test_paste_without_engine_clues_still_renders() -> None:
    # vllm-021: no vLLM path, prefix or flag in the paste, so no engine is detected
    text = "ValueError: Total number of attention heads (12) must be divisible by tensor parallel size (8)."
    answer = _answer(text, "vllm.tp_heads_not_divisible")
    assert "--tensor-parallel-size 4 --pipeline-parallel-size 2" in answer.recovery


@pytest.mark.parametrize("engine", [None, "", "sglang"])
def test_every_vllm_recovery_renders_without_values_or_engine(engine: str | None) -> None:
    import yaml

    data = yaml.safe_load((DEFAULT_DIR / "vllm.yaml").read_text(encoding="utf-8"))
    for sig in data["signatures"]:
        text = render(sig["recovery"], {}, engine)
        assert text.strip(), sig["id"]
        assert "{{" not in text and "{%" not in text, sig["id"]
