"""Computed advice for TensorRT-LLM signatures: the recovery carries numbers worked out from the paste.

Each paste is a real line (or a short excerpt) from ../shared/corpus/errors.jsonl; the case id is
noted beside it. The expected numbers are computed by hand from the message.
"""

from __future__ import annotations

import re

from triage_bot.core import triage


def _answer(text: str, expected_id: str):
    answer = triage(text)
    assert answer.match is not None, f"no match for {text!r}"
    assert answer.match.id == expected_id, answer.match.id
    return answer


# -- trtllm.mpi_size_mismatch -----------------------------------------------------------------


def test_mpi_size_mismatch_launches_tp_times_pp_ranks() -> None:
    # trtllm-005: TP 2 x PP 1 = 2 ranks, the run had 1
    text = "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 1 != TP size 2 * PP size 1"
    answer = _answer(text, "trtllm.mpi_size_mismatch")
    assert answer.match.values["mpi_size"] == 1
    assert answer.match.values["tp"] == 2
    assert "1 MPI rank(s)" in answer.recovery
    assert any(c.startswith("mpirun -n 2 ") for c in answer.commands), answer.commands
    assert any("--world_size=2" in c for c in answer.commands), answer.commands


def test_mpi_size_mismatch_counts_context_parallelism() -> None:
    # newest wording (CP variant of the same check): 2 x 1 x 4 = 8
    text = "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 4 != TP size 2 * PP size 1 * CP Size 4"
    answer = _answer(text, "trtllm.mpi_size_mismatch")
    assert any(c.startswith("mpirun -n 8 ") for c in answer.commands), answer.commands
    assert any("--world_size=8" in c for c in answer.commands), answer.commands


def test_mpi_size_mismatch_without_numbers_keeps_a_placeholder() -> None:
    # trtllm-001: the older assertion prints no numbers
    text = (
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp "
        "(/home/jenkins/agent/workspace/LLM/release-0.8/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:90)"
    )
    answer = _answer(text, "trtllm.mpi_size_mismatch")
    mpirun = [c for c in answer.commands if c.startswith("mpirun -n ")]
    assert mpirun, answer.commands
    assert re.search(r"mpirun -n <[\w*]+>", mpirun[0]), mpirun[0]


# -- trtllm.insufficient_gpus -----------------------------------------------------------------


def test_insufficient_gpus_offers_a_layout_that_fits() -> None:
    # trtllm-088: 8 visible, 16 required -> tp 8 on one node, or 2 nodes of 8
    text = "RuntimeError: Only 8 GPUs are available, but 16 are required."
    answer = _answer(text, "trtllm.insufficient_gpus")
    assert "exposes 8 GPU(s)" in answer.recovery
    assert "needs 16" in answer.recovery
    assert any("--tp_size 8 --pp_size 1" in c for c in answer.commands), answer.commands
    assert any(c.startswith("srun -N 2 ") and "--tp_size 16" in c for c in answer.commands), answer.commands


# -- trtllm.max_input_len_exceeded ------------------------------------------------------------


def test_max_input_len_rounds_the_rebuild_up_and_says_how_much_to_cut() -> None:
    # trtllm-031: 5056 > 2048 -> 3008 tokens too many; rebuild with 5120 (next multiple of 1024)
    text = "Cannot process new request: Prompt length (5056) exceeds maximum sequence length (2048)"
    answer = _answer(text, "trtllm.max_input_len_exceeded")
    assert "3008 tokens" in answer.recovery
    assert any("--max_input_len 5120" in c and "--max_seq_len 6144" in c for c in answer.commands), (
        answer.commands
    )


# -- trtllm.max_seq_len_exceeded --------------------------------------------------------------


def test_max_seq_len_gives_the_output_budget_that_fits() -> None:
    # trtllm-033: 6973 + 4095 + 0 = 11068 > 8192; 8192 - 6973 - 0 = 1219 new tokens fit
    text = (
        "[TensorRT-LLM][ERROR] Encountered an error in forwardAsync function: [TensorRT-LLM][ERROR] "
        "Assertion failed: Input length (6973) + max new tokens (4095) + draft tokens (0) must be less "
        "than max sequence length (8192). (/sources/contrib/tensorrt-llm/cpp/tensorrt_llm/runtime/gptDecoderBatched.cpp:444)"
    )
    answer = _answer(text, "trtllm.max_seq_len_exceeded")
    assert "11068" in answer.recovery
    assert "1219" in answer.recovery
    assert any('"max_tokens": 1219' in c for c in answer.commands), answer.commands
    assert any("--max_seq_len 11264" in c for c in answer.commands), answer.commands


# -- trtllm.max_num_tokens_exceeded -----------------------------------------------------------


def test_max_num_tokens_needed_for_the_prompt() -> None:
    # trtllm-067: 9351 + 0 > 8192 -> at least 10240 (next multiple of 1024)
    text = (
        "ValueError: The sum of prompt length (9351.0), query length (0) should not exceed "
        "max_num_tokens (8192)"
    )
    answer = _answer(text, "trtllm.max_num_tokens_exceeded")
    assert "9351 tokens" in answer.recovery
    assert "1159 over" in answer.recovery
    assert any("--max_num_tokens 10240" in c for c in answer.commands), answer.commands


def test_max_num_tokens_benchmark_wording() -> None:
    # trtllm-068: benchmarking 8192 tokens on an engine built with max_num_tokens=128
    text = (
        "[TensorRT-LLM][ERROR] Assertion failed: The engine is built with remove_input_padding=True and "
        "max_num_tokens=128, while trying to benchmark on 8192 tokens"
    )
    answer = _answer(text, "trtllm.max_num_tokens_exceeded")
    assert any("--max_num_tokens 8192" in c for c in answer.commands), answer.commands


# -- trtllm.invalid_build_config --------------------------------------------------------------


def test_invalid_build_config_rounds_max_num_tokens_to_whole_blocks() -> None:
    # trtllm-069: 96 already divides by 32, so the blocks are larger; 128 suits 32/64/128-token blocks
    text = (
        "[TRT-LLM] [I] max_seq_len=128, max_num_requests=96, max_num_tokens=96, max_batch_size=96 0: "
        "[01/23/2026-04:43:47] [TRT-LLM] [E] Failed to initialize executor on rank 0: [TensorRT-LLM][ERROR] "
        "Assertion failed: maxNumTokens.value() % tokensPerBlock == 0 (../tensorrt_llm/batch_manager/cacheTransBuffer.cpp:206)"
    )
    answer = _answer(text, "trtllm.invalid_build_config")
    assert answer.match.values["max_num_tokens"] == 96
    assert "max_num_tokens=96" in answer.recovery
    assert any("--max_num_tokens 128" in c for c in answer.commands), answer.commands


# -- trtllm.engine_incompatible_device --------------------------------------------------------


def test_incompatible_device_echoes_both_compute_capabilities() -> None:
    # trtllm-011: loading GPU is compute 8.0, the engine was built on 8.9
    text = (
        "[03/27/2024-11:09:02] [TRT] [E] 6: The engine plan file is generated on an incompatible device, "
        "expecting compute 8.0 got compute 8.9, please rebuild."
    )
    answer = _answer(text, "trtllm.engine_incompatible_device")
    assert "This GPU is compute 8.0 (sm_80" in answer.recovery
    assert "built on compute 8.9 (sm_89" in answer.recovery


# -- trtllm.engine_plan_version_mismatch ------------------------------------------------------


def test_plan_version_mismatch_echoes_runtime_and_engine_versions() -> None:
    # trtllm-006
    text = (
        "[TensorRT-LLM][ERROR] 6: The engine plan file is not compatible with this version of TensorRT, "
        "expecting library version 9.2.0.5 got 9.3.0.1, please rebuild."
    )
    answer = _answer(text, "trtllm.engine_plan_version_mismatch")
    assert "loaded now is 9.2.0.5" in answer.recovery
    assert "written by TensorRT 9.3.0.1" in answer.recovery


def test_plan_version_mismatch_serialization_tags() -> None:
    # trtllm-007
    text = (
        "Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does not match. "
        "Note: Current Version: 228, Serialized Engine Version: 237"
    )
    answer = _answer(text, "trtllm.engine_plan_version_mismatch")
    assert "runtime 228, engine 237" in answer.recovery


# -- trtllm.optimization_profile_mismatch -----------------------------------------------------


def test_optimization_profile_shows_shape_against_profile() -> None:
    # trtllm-062: batch 7 is above the profile's max batch 4
    text = (
        "ValueError: Couldn't assign input_ids with shape torch.Size([7, 346]), engine supports "
        "[min, opt, max] = [(1, 1), (2, 1), (4, 1024)]"
    )
    answer = _answer(text, "trtllm.optimization_profile_mismatch")
    assert "shape [7, 346]" in answer.recovery
    assert "min (1, 1), opt (2, 1), max (4, 1024)" in answer.recovery
    assert "7 is above the profile maximum 4" in answer.recovery
