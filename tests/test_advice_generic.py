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
"""

from __future__ import annotations

import pytest

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
# vllm-015: 2 MiB asked with 448 KiB free -> the 5-point minimum step
OOM_KIB = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 6 has a total "
    "capacity of 44.53 GiB of which 448.00 KiB is free."
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


def test_oom_values_are_captured_with_their_units() -> None:
    answer = _answer(VLLM_CTX + OOM_1_74, "generic.cuda_oom")
    values = answer.match.values
    assert values["gpu_index"] == 1
    assert values["alloc_size"] == 1.74 and values["alloc_unit"] == "GiB"
    assert values["gpu_free"] == 605.88 and values["gpu_free_unit"] == "MiB"
    assert values["gpu_total"] == 23.57 and values["gpu_total_unit"] == "GiB"


def test_oom_under_vllm_lowers_gpu_memory_utilization_from_the_default() -> None:
    answer = _answer(VLLM_CTX + OOM_1_74, "generic.cuda_oom")
    assert answer.match.engine == "vllm"
    assert "GPU 1" in answer.recovery
    assert "--gpu-memory-utilization 0.83" in _commands(answer)  # 0.90 - 7 points
    assert "--mem-fraction-static" not in answer.recovery
    assert "kv_cache_free_gpu_mem" not in answer.recovery


def test_vllm_worker_prefix_alone_is_enough_to_pick_vllm_flags() -> None:
    # vllm-099 as pasted: only the "(VllmWorker rank=N pid=M)" prefix says this is vLLM
    answer = _answer(VLLM_PREFIX + OOM_1_74, "generic.cuda_oom")
    assert answer.match.engine == "vllm"
    assert "--gpu-memory-utilization 0.83" in _commands(answer)


def test_oom_under_vllm_starts_from_the_pastes_own_flag() -> None:
    text = "$ vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.95\n" + VLLM_CTX + OOM_1_74
    answer = _answer(text, "generic.cuda_oom")
    assert answer.match.engine == "vllm"
    assert "vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.88" in _commands(answer)


def test_oom_under_sglang_lowers_mem_fraction_static() -> None:
    answer = _answer(SGLANG_CTX + OOM_1_74, "generic.cuda_oom")
    assert answer.match.engine == "sglang"
    assert "GPU 1" in answer.recovery
    assert "--mem-fraction-static 0.78" in _commands(answer)  # assumed 0.85 - 7 points
    assert "--gpu-memory-utilization" not in answer.recovery


def test_oom_under_sglang_starts_from_the_pastes_own_flag() -> None:
    text = (
        "python -m sglang.launch_server --model-path m --mem-fraction-static 0.88\n" + SGLANG_CTX + OOM_1_74
    )
    answer = _answer(text, "generic.cuda_oom")
    assert answer.match.engine == "sglang"
    assert "--mem-fraction-static 0.81" in _commands(answer)


def test_oom_under_trtllm_lowers_kv_cache_free_gpu_mem_fraction() -> None:
    answer = _answer(TRTLLM_CTX + OOM_1_74, "generic.cuda_oom")
    assert answer.match.engine == "trtllm"
    assert "GPU 1" in answer.recovery
    commands = _commands(answer)
    assert "--kv_cache_free_gpu_memory_fraction 0.80" in commands  # trtllm-serve
    assert "kv_cache_free_gpu_mem_fraction:0.80" in commands  # Triton config.pbtxt
    assert "--gpu-memory-utilization" not in answer.recovery


def test_oom_mixed_units_kib_free() -> None:
    answer = _answer(VLLM_CTX + OOM_KIB, "generic.cuda_oom")
    assert answer.match.values["gpu_free_unit"] == "KiB"
    assert "GPU 6" in answer.recovery
    assert "448.00 KiB" in answer.recovery
    assert "--gpu-memory-utilization 0.85" in _commands(answer)  # minimum 5-point step


def test_oom_allocation_larger_than_the_gpu_is_not_a_fraction_problem() -> None:
    answer = _answer(VLLM_CTX + OOM_HUGE, "generic.cuda_oom")
    assert "larger than the whole GPU" in answer.recovery
    assert "--gpu-memory-utilization 0." not in _commands(answer)
    assert "--tensor-parallel-size 2" in _commands(answer)


@pytest.mark.parametrize(
    ("context", "placeholder"),
    [
        (VLLM_CTX, "--gpu-memory-utilization <gpu_memory_utilization>"),
        (SGLANG_CTX, "--mem-fraction-static <mem_fraction_static>"),
        (TRTLLM_CTX, "--kv_cache_free_gpu_memory_fraction <kv_cache_free_gpu_mem_fraction>"),
    ],
)
def test_oom_without_sizes_renders_a_placeholder(context: str, placeholder: str) -> None:
    # vllm-102 (cut): only "CUDA error: out of memory", no sizes to compute from
    answer = _answer(context + "RuntimeError: CUDA error: out of memory", "generic.cuda_oom")
    assert placeholder in _commands(answer)


def test_oom_cut_after_the_allocation_size_renders_a_placeholder() -> None:
    answer = _answer(
        VLLM_CTX + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 150.00 MiB",
        "generic.cuda_oom",
    )
    assert answer.match.values["alloc_size"] == 150.0
    assert "<gpu_memory_utilization>" in _commands(answer)


# -- other generic ids with numbers ----------------------------------------------------------------


def test_port_in_use_names_the_port_from_uvicorn() -> None:
    # vllm-053
    text = VLLM_CTX + "error while attempting to bind on address ('0.0.0.0', 8000): address already in use"
    answer = _answer(text, "generic.port_in_use")
    assert answer.match.values["bound_port"] == 8000
    commands = _commands(answer)
    assert "lsof -iTCP:8000" in commands
    assert "--port 8001" in commands


def test_port_in_use_names_the_zmq_port_under_sglang() -> None:
    # sglang-069
    text = SGLANG_CTX + "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:50000')"
    answer = _answer(text, "generic.port_in_use")
    assert answer.match.values["bound_port"] == 50000
    assert "lsof -iTCP:50000" in _commands(answer)
    assert "--nccl-port" in _commands(answer)


def test_port_in_use_without_a_port_renders_a_placeholder() -> None:
    # vllm-055
    answer = _answer(VLLM_CTX + "OSError: [Errno 98] Address already in use", "generic.port_in_use")
    assert "lsof -iTCP:<port>" in _commands(answer)


def test_shm_too_small_reports_the_nccl_segment_size() -> None:
    # gpu-018: 7340384 bytes = 7.0 MiB
    answer = _answer(
        "Error while creating shared memory segment /dev/shm/nccl-pZafXL (size 7340384)",
        "generic.shm_too_small",
    )
    assert answer.match.values["shm_bytes"] == 7340384
    assert "7.0 MiB" in answer.recovery
    assert "shm" in _commands(answer)


def test_shm_too_small_triton_python_backend_region() -> None:
    # trtllm-086: 67108864 bytes = 64.0 MiB
    text = TRTLLM_CTX + (
        "tritonclient.utils.InferenceServerException: Failed to increase the shared memory pool size for key "
        "'triton_python_backend_shm_region_2' to 67108864 bytes. If you are running Triton inside docker, use "
        "'--shm-size' flag to control the shared memory region size. Error: No space left on device"
    )
    answer = _answer(text, "generic.shm_too_small")
    assert answer.match.engine == "trtllm"
    assert "64.0 MiB" in answer.recovery
    assert "triton_python_backend_shm_region_2" in answer.recovery
    assert "--shm-size=2g" in _commands(answer)


def test_shm_beats_the_nccl_system_error_it_is_printed_under() -> None:
    # sglang-042: the generic "unhandled system error" line comes first, the segment line is the cause
    text = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:81, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        "Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)"
    )
    _answer(text, "generic.shm_too_small")


def test_xid_names_the_pci_address() -> None:
    # gpu-019
    text = "NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.\nNVRM: GPU 0000:06:00.0: GPU has fallen off the bus."
    answer = _answer(text, "generic.xid_gpu_fallen_off_bus")
    assert answer.match.values["pci_address"] == "0000:06:00"
    assert "0000:06:00" in answer.recovery


def test_gpu_lost_names_the_pci_address_without_an_engine() -> None:
    # gpu-022
    text = "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU"
    answer = _answer(text, "generic.xid_gpu_fallen_off_bus")
    assert answer.match.engine == "generic"
    assert "PCI 0000:02:00.0" in answer.recovery


def test_nvml_mismatch_names_the_library_version() -> None:
    # gpu-042
    text = "nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124"
    answer = _answer(text, "generic.nvml_driver_library_mismatch")
    assert "570.124" in answer.recovery
    assert "cat /proc/driver/nvidia/version" in _commands(answer)


def test_driver_mismatch_found_versus_required() -> None:
    # wording from ../shared/reference/trtllm_failures.md (cuda_driver_mismatch)
    text = (
        "ERROR: This container was built for NVIDIA Driver Release 535.86 or later, but version 510.85.02 "
        "was detected and compatibility mode is UNAVAILABLE."
    )
    answer = _answer(TRTLLM_CTX + text, "generic.cuda_driver_mismatch")
    assert "535.86" in answer.recovery
    assert "510.85.02" in answer.recovery


def test_driver_too_old_decodes_the_cuda_version() -> None:
    # wording from ../shared/reference/vllm_failures.md: 11040 -> CUDA 11.4
    text = VLLM_CTX + "RuntimeError: The NVIDIA driver on your system is too old (found version 11040)."
    answer = _answer(text, "generic.cuda_driver_mismatch")
    assert answer.match.values["found_cuda_version"] == 11040
    assert "CUDA up to 11.4" in answer.recovery


def test_no_kernel_image_computes_the_arch_list() -> None:
    # fv-037: RTX 5090 is sm_120 -> compute capability 12.0
    text = VLLM_CTX + (
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    )
    answer = _answer(text, "generic.no_kernel_image")
    assert answer.match.values["gpu_sm"] == 120
    assert "compute capability 12.0" in answer.recovery
    assert 'TORCH_CUDA_ARCH_LIST="12.0"' in _commands(answer)


def test_nccl_timeout_on_the_first_collective_points_at_connectivity() -> None:
    # vllm-114: SeqNum=2, Timeout(ms)=600000
    text = (
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=134217728, NumelOut=134217728, Timeout(ms)=600000) "
        "ran for 600059 milliseconds before timing out."
    )
    answer = _answer(VLLM_CTX + text, "generic.nccl_timeout")
    assert answer.match.values["seq_num"] == 2
    assert "first communication" in answer.recovery
    assert "10 min" in answer.recovery
    assert "NCCL_P2P_DISABLE=1" in _commands(answer)


def test_nccl_system_error_flags_a_link_local_peer() -> None:
    # sglang-040
    text = (
        "hd03-gpu2-0031:14133:14133 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
        "169.254.20.10<43369> failed : Software caused connection abort"
    )
    answer = _answer(SGLANG_CTX + text, "generic.nccl_system_error")
    assert "169.254.20.10" in answer.recovery
    assert "link-local" in answer.recovery
    assert "NCCL_SOCKET_IFNAME" in _commands(answer)


def test_segfault_names_the_crashing_symbol() -> None:
    # fv-052 (Ray prefix and ANSI colour kept as pasted)
    text = (
        "^[[36m(RayWorkerWrapper pid=4823, ip=10.233.68.253)^[[0m *** SIGSEGV received at time=1739339449 on cpu 57 ***\n"
        "^[[36m(RayWorkerWrapper pid=4823, ip=10.233.68.253)^[[0m PC: @     0x7ee184049b8a  (unknown)  addProxyOpIfNeeded()"
    )
    answer = _answer(text, "generic.segfault")
    assert answer.match.values["fault_symbol"] == "addProxyOpIfNeeded"
    assert "addProxyOpIfNeeded" in answer.recovery
