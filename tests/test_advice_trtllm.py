"""Computed advice for TensorRT-LLM signatures: the recovery carries numbers worked out from the paste.

The cases that check only the answer's signature, values and pieces of the recovery live beside
their signatures, as examples in knowledge/trtllm.yaml (checked by `kb lint` and
tests/test_signature_examples.py). The tests left here check where a command starts or what one
command holds together, which an example cannot state.

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
