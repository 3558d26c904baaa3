"""The area map: engine paths in a paste, the frame that decides, and what the matcher makes of it."""

from __future__ import annotations

import pytest

from triage_bot.core import default_triager
from triage_bot.kb.schema import AREA_CORE, AREA_MODEL, EngineInfo
from triage_bot.matching.areas import AreaMap, Areas, deciding
from triage_bot.text.normalize import normalize

VLLM = AreaMap(
    "vllm",
    {
        "vllm/": AREA_CORE,
        "vllm/lora/": "component.lora",
        "vllm/lora/utils.py": "component.lora",
        "vllm/model_executor/models/": AREA_MODEL,
        "vllm/csrc/moe/": "component.moe_kernels",
    },
)
TRTLLM = AreaMap(
    "trtllm",
    {
        "tensorrt_llm/": AREA_CORE,
        "cpp/tensorrt_llm/": AREA_CORE,
        "cpp/tensorrt_llm/kernels/lora/": "component.lora",
        "tensorrt_llm/_torch/speculative/": "component.speculative_decoding",
    },
)


@pytest.mark.parametrize(
    ("path", "relative"),
    [
        ("/usr/local/lib/python3.12/site-packages/vllm/lora/models.py", "vllm/lora/models.py"),
        ("/workspace/vllm/vllm/lora/models.py", "vllm/lora/models.py"),  # a checkout named after the package
        ("C:\\venv\\Lib\\site-packages\\vllm\\lora\\models.py", "vllm/lora/models.py"),
        ("/home/me/myvllm/app.py", None),  # a name that only contains the package's
        ("/opt/app/serve.py", None),
    ],
)
def test_paths_are_read_from_the_engines_package_root(path: str, relative: str | None) -> None:
    assert VLLM.relative(path) == relative


def test_the_longest_anchor_and_prefix_win() -> None:
    assert (
        TRTLLM.relative("/src/tensorrt_llm/cpp/tensorrt_llm/kernels/lora/lora.cpp")
        == "cpp/tensorrt_llm/kernels/lora/lora.cpp"
    )
    assert TRTLLM.lookup("cpp/tensorrt_llm/kernels/lora/lora.cpp") == "component.lora"
    assert TRTLLM.lookup("cpp/tensorrt_llm/runtime/x.cpp") == AREA_CORE
    assert VLLM.lookup("vllm/lora/utils.py") == "component.lora"
    assert VLLM.lookup("vllm/lorax/x.py") == AREA_CORE  # a prefix is a directory, not a string prefix


def _decide(text: str) -> tuple[str, str] | None:
    areas = Areas([EngineInfo(id="vllm", name="vLLM", detect=[{"pattern": "vllm"}], areas=VLLM.areas)])
    hit = deciding(areas.locate(normalize(text)))
    return (hit.family, hit.path) if hit else None


LORA_IN_CORE = """Traceback (most recent call last):
  File "/x/site-packages/vllm/v1/engine/core.py", line 10, in run
    step()
  File "/x/site-packages/vllm/lora/models.py", line 20, in activate
    self._load()
  File "/x/site-packages/vllm/v1/worker/gpu_model_runner.py", line 30, in _load
    x[i]
IndexError: list index out of range"""


def test_the_deepest_frame_outside_the_plumbing_decides() -> None:
    assert _decide(LORA_IN_CORE) == ("component.lora", "vllm/lora/models.py")


def test_the_first_traceback_of_a_chain_is_the_root_cause() -> None:
    chained = (
        LORA_IN_CORE + "\n\nThe above exception was the direct cause of the following exception:\n\n"
        'Traceback (most recent call last):\n  File "/x/site-packages/vllm/model_executor/models/llama.py", line 5, in f\n'
        "    g()\nRuntimeError: boom"
    )
    assert _decide(chained) == ("component.lora", "vllm/lora/models.py")


def test_an_import_chain_names_no_area() -> None:
    imports = (
        'Traceback (most recent call last):\n  File "/x/site-packages/vllm/lora/__init__.py", line 1, in <module>\n'
        "    from vllm.lora.punica import x\nImportError: cannot import name 'x'"
    )
    assert _decide(imports) is None


def test_a_module_named_in_an_error_counts_but_not_one_in_a_launch_command() -> None:
    assert _decide("KeyError raised in vllm.lora.utils.parse_fine_tuned_lora_name") == (
        "component.lora",
        "vllm/lora/utils.py",
    )
    assert _decide("python -m vllm.lora.utils --model x") is None


def test_the_module_an_import_cannot_find_is_no_area() -> None:
    """It is missing from the install (or this version), not broken in its own code."""
    assert _decide("ModuleNotFoundError: No module named 'vllm.lora.utils'") is None
    missing = default_triager().triage("sglang-deepep-arm64: No module named 'sglang.srt.parser'")
    assert missing.match is not None and missing.match.id.startswith("install.")


def test_a_bare_exception_is_answered_with_its_area() -> None:
    answer = default_triager().triage(
        LORA_IN_CORE.replace("/x/site-packages/", "/usr/lib/python3/dist-packages/")
    )
    assert answer.match is not None and answer.match.id == "component.lora"
    assert "vllm/lora/models.py" in answer.cause


def test_a_model_file_is_that_models_bug_and_load_weights_is_the_checkpoint() -> None:
    crash = (
        'Traceback (most recent call last):\n  File "/x/site-packages/vllm/model_executor/models/qwen2_moe.py", line 9, in {fn}\n'
        "    y = z[k]\nIndexError: index 64 is out of bounds for dimension 0 with size 64"
    )
    model_bug = default_triager().triage(crash.format(fn="forward"))
    assert model_bug.match is not None and model_bug.match.id == "fallback.unexplained_crash"
    assert "qwen2_moe" in model_bug.recovery
    weights = default_triager().triage(crash.format(fn="load_weights"))
    assert weights.match is not None and weights.match.id == "component.weight_loading"


def test_every_area_of_the_bundled_maps_is_a_family_core_or_model() -> None:
    kb = default_triager().kb
    families = {s.id for s in kb.signatures if s.is_family}
    for info in kb.engines.values():
        assert info.areas, f"{info.id} has no area map"
        assert set(info.areas.values()) <= families | {AREA_CORE, AREA_MODEL}


EXECUTOR = (
    "[TensorRT-LLM][ERROR] Encountered an error in forwardAsync function: [TensorRT-LLM][ERROR] "
    "Assertion failed: {assertion} (/src/tensorrt_llm/cpp/tensorrt_llm/{path}:84)"
)


def test_the_source_file_of_an_assertion_inside_the_executor_error_names_the_area() -> None:
    """TensorRT-LLM's executor error only wraps what failed; the assertion's file says where."""
    lora = default_triager().triage(
        EXECUTOR.format(assertion="lora_weights has to few values for attn_q", path="runtime/loraUtils.cpp")
    )
    assert lora.match is not None and lora.match.id == "component.lora"
    assert "trtllm.executor_forward_error" in [o.id for o in lora.others]


def test_an_executor_error_with_an_unknown_inner_error_quotes_it_and_asks_for_nothing_above() -> None:
    answer = default_triager().triage(
        EXECUTOR.format(assertion="mBlocks.size() == 3", path="runtime/tllmRuntime.cpp")
    )
    assert answer.match is not None and answer.match.id == "trtllm.executor_forward_error"
    assert not answer.incomplete
    assert "mBlocks.size() == 3" in answer.note and "above" not in answer.note


def test_the_engine_whose_frames_raised_is_the_engine_that_runs() -> None:
    """Frames in one engine's tree decide the engine over pages that name another one; frames in
    two trees (old SGLang builds imported vLLM's layers) leave it to the clue scores."""
    areas = Areas(
        [
            EngineInfo(id=e, name=e, detect=[{"pattern": e}], areas=tree.areas)
            for e, tree in (("vllm", VLLM), ("trtllm", TRTLLM))
        ]
    )
    sglang_frame = 'File "/usr/lib/python3/site-packages/sglang/srt/managers/scheduler.py", line 9, in run\n'
    vllm_frame = 'File "/usr/lib/python3/site-packages/vllm/v1/engine/core.py", line 3, in step\n'
    trtllm_frame = 'File "/opt/tensorrt_llm/_torch/pyexecutor/py_executor.py", line 5, in loop\n'
    assert areas.frame_engines(normalize(vllm_frame + "KeyError: 'x'")) == {"vllm"}
    assert areas.frame_engines(normalize(vllm_frame + trtllm_frame)) == {"vllm", "trtllm"}
    assert areas.frame_engines(normalize(sglang_frame + "see vllm/ and tensorrt_llm/ docs")) == set()

    triager = default_triager()
    talk = "TensorRT-LLM trtllm-serve tensorrt_llm executor MPI engine build, benchmark numbers.\n" * 200
    crash = "Traceback (most recent call last):\n  " + sglang_frame + "KeyError: 'req_pool_idx'\n"
    assert triager.match(talk + crash + talk).engine == "sglang"
    assert triager.match(talk).engine == "trtllm"
