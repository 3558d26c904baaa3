"""Computed advice for SGLang signatures: the recovery is sized from the numbers in the paste.

Each test feeds a short excerpt of a real paste from ../shared/corpus/errors.jsonl (case id in the
comment) and checks the exact numbers the recovery template derives from it. The last tests check
that a paste without numbers still renders a usable command with a visible <placeholder>.
"""

from __future__ import annotations

import re

from triage_bot.core import triage


def _answer(text: str, sig_id: str):
    answer = triage(text)
    assert answer.match is not None, f"no match for {text[:80]!r}"
    assert answer.match.id == sig_id, f"expected {sig_id}, got {answer.match.id}"
    return answer


def _command_with(answer, flag: str) -> str:
    for command in answer.commands:
        if flag in command:
            return command
    raise AssertionError(f"no command with {flag}: {answer.commands}")


# --- mem_fraction_not_enough_memory: a HIGHER --mem-fraction-static -------------------------


def test_mem_fraction_raised_from_value_in_message():
    # sglang-001 wording, with the " Current value: ..." suffix newer builds append
    text = (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.8"
    )
    answer = _answer(text, "sglang.mem_fraction_not_enough_memory")
    assert answer.match.values["mem_fraction_static"] == 0.8
    assert "--mem-fraction-static 0.85" in _command_with(answer, "--mem-fraction-static")


def test_mem_fraction_raised_from_launch_command():
    # sglang-001 error line under the launch command the reporter used
    text = (
        "python3 -m sglang.launch_server --model-path Qwen/Qwen2-7B-Instruct --tp 2 "
        "--mem-fraction-static 0.6\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    )
    answer = _answer(text, "sglang.mem_fraction_not_enough_memory")
    command = _command_with(answer, "--mem-fraction-static")
    assert "--mem-fraction-static 0.70" in command
    assert "Qwen/Qwen2-7B-Instruct" in command


# --- input_longer_than_context: lengths, tokens to cut, --context-length needed --------------


def test_input_longer_than_context_cut_and_context_length():
    # sglang-057
    text = "ValueError: The input (85050 tokens) is longer than the model's context length (32768 tokens)."
    answer = _answer(text, "sglang.input_longer_than_context")
    assert answer.match.values["input_tokens"] == 85050
    assert answer.match.values["context_length"] == 32768
    assert "52282" in answer.recovery  # 85050 - 32768 tokens to cut
    assert "--context-length 86016" in _command_with(answer, "--context-length")


def test_requested_token_count_split_into_prompt_and_completion():
    # sglang-058
    text = (
        "Bad Request: Requested token count exceeds the model's maximum context length of 202752 "
        "tokens. You requested a total of 202941 tokens: 170941 tokens from the input messages and "
        "32000 tokens for the completion. Please reduce the number of tokens in the input messages "
        "or the completion to fit within the limit."
    )
    answer = _answer(text, "sglang.input_longer_than_context")
    assert "189 tokens too many" in answer.recovery  # 202941 - 202752
    assert "31811" in answer.recovery  # max_tokens that still fits: 202752 - 170941
    assert "--context-length 203776" in _command_with(answer, "--context-length")


# --- prefill_out_of_memory: --chunked-prefill-size sized from the allocation numbers ---------


def test_prefill_oom_chunk_from_flattened_paste():
    # sglang-014 (newlines lost in the paste, "Avaliable" typo of older builds)
    text = (
        "RuntimeError: Prefill out of memory. Try to lower your batch size.Try to allocate 1444 "
        "tokens.Avaliable tokens:5120self.token to kv pool allocator.available size()=5120self.tree "
        "cache.evictable size()=0"
    )
    answer = _answer(text, "sglang.prefill_out_of_memory")
    assert answer.match.values["need_tokens"] == 1444
    assert answer.match.values["available_tokens"] == 5120
    # half of min(1444, 5120), rounded down to a multiple of 256
    assert "--chunked-prefill-size 512" in _command_with(answer, "--chunked-prefill-size")


def test_prefill_oom_hybrid_pool():
    # sglang-013
    text = (
        "RuntimeError: Prefill out of memory. Try to lower your batch size.\n"
        "Try to allocate 8192 tokens.\n"
        "Available full tokens: 8070656 (full_available_size=7936 + full_evictable_size_=8062720)\n"
        "Available mamba: 760 (available_size=57 + component_evictable_size_=703)"
    )
    answer = _answer(text, "sglang.prefill_out_of_memory")
    assert "--chunked-prefill-size 4096" in _command_with(answer, "--chunked-prefill-size")
    assert "760" in answer.recovery


# --- kv_pool_full_retract: --max-running-requests from the numbers ---------------------------


def test_fatal_decode_oom_caps_running_requests():
    # sglang-010
    text = (
        "RuntimeError: Decode out of memory. Try to lower your batch size.\n"
        "Try to allocate 127 tokens.\n"
        "Available tokens: 5248 (available_size=5248 + evictable_size=0)"
    )
    answer = _answer(text, "sglang.kv_pool_full_retract")
    assert answer.match.values["need_tokens"] == 127
    # 3/4 of the 127-request batch that failed
    assert "--max-running-requests 95" in _command_with(answer, "--max-running-requests")


def test_retraction_warning_uses_running_batch():
    # sglang-006 (first lines)
    text = (
        "[2025-01-06 02:58:41 TP0] Decode batch. #running-req: 2, #token: 307801, token usage: 1.00, "
        "gen throughput (token/s): 10.93, #queue-req: 0\n"
        "[2025-01-06 02:58:44 TP0] Decode out of memory happened. #retracted_reqs: 1, "
        "#new_token_ratio: 0.0980 -> 0.9446"
    )
    answer = _answer(text, "sglang.kv_pool_full_retract")
    # 2 running, 1 retracted: the pool held 1 request of that length
    assert "--max-running-requests 1" in _command_with(answer, "--max-running-requests")
    assert "--schedule-conservativeness 1.3" in _command_with(answer, "--schedule-conservativeness")


# --- req_to_token_pool_full: shortfall of request slots ---------------------------------------


def test_req_slots_shortfall():
    # sglang-016
    text = (
        "RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for "
        "`--max-running-requests`. self.req_to_token_pool.available_size()=1, num_reqs=2,"
    )
    answer = _answer(text, "sglang.req_to_token_pool_full")
    assert answer.match.values["available_slots"] == 1
    assert answer.match.values["num_reqs"] == 2
    assert "1 short" in answer.recovery
    assert "<current_max_running_requests - 1>" in _command_with(answer, "--max-running-requests")


# --- token_pool_memory_leak: size of the accounting mismatch ----------------------------------


def test_token_pool_leak_mismatch():
    # sglang-018
    text = (
        "ValueError: token_to_kv_pool_allocator memory leak detected! available_size=3189424, "
        "protected_size=0, self.max_total_num_tokens=3185200\n"
        "self.token_to_kv_pool_allocator.available_size()=2864304\n"
        "self.tree_cache.evictable_size()=325120"
    )
    answer = _answer(text, "sglang.token_pool_memory_leak")
    assert "4224" in answer.recovery  # 3189424 + 0 - 3185200 slots counted twice
    assert any("--disable-radix-cache" in c for c in answer.commands)


# --- cuda_graph_capture_failure: half the batch size that broke -------------------------------


def test_cuda_graph_capture_halves_batch_size():
    # sglang-027 (excerpt)
    text = (
        "[2026-06-25 17:45:46 TP0] Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128, "
        "256, 384, 512]\n"
        "[2026-06-25 17:45:46 TP1] Capture cuda graph begin. This can take up to several minutes. "
        "avail mem=2.33 GB\n"
        "Capturing batches (bs=512 avail_mem=0.13 GB): 0%| | 0/52 [00:00<?, ?it/s]"
        "[2026-06-25 17:45:47 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        'File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", '
        "line 626, in init\n"
        "self.capture()\n"
    )
    answer = _answer(text, "sglang.cuda_graph_capture_failure")
    assert answer.match.values["failed_bs"] == 512
    assert "--cuda-graph-max-bs 256" in _command_with(answer, "--cuda-graph-max-bs")
    assert "0.13 GB" in answer.recovery


# --- scheduler_watchdog_timeout: echo the timeout and suggest a value -------------------------


def test_watchdog_timeout_echoed_and_doubled():
    # sglang-030
    text = "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"
    answer = _answer(text, "sglang.scheduler_watchdog_timeout")
    assert answer.match.values["watchdog_timeout"] == 300
    assert "300 s" in answer.recovery
    assert "--watchdog-timeout 600" in _command_with(answer, "--watchdog-timeout")


# --- numbers missing: the command still renders, with a visible placeholder -------------------

_PLACEHOLDER = re.compile(r"<[^<>\s][^<>]*>")


def test_missing_numbers_render_placeholder_command():
    # sglang-001: no current value anywhere in the paste
    text = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    answer = _answer(text, "sglang.mem_fraction_not_enough_memory")
    command = _command_with(answer, "--mem-fraction-static")
    assert "<mem_fraction_static + 0.05>" in command
    assert _PLACEHOLDER.search(command)


def test_retraction_without_batch_line_keeps_placeholder():
    # sglang-008: the warning alone, no "#running-req" line above it
    text = (
        "[2025-05-28 08:25:50] Decode out of memory happened. #retracted_reqs: 1, "
        "#new_token_ratio: 0.8024 -> 0.9085"
    )
    answer = _answer(text, "sglang.kv_pool_full_retract")
    command = _command_with(answer, "--max-running-requests")
    assert "<max_running_requests>" in command
