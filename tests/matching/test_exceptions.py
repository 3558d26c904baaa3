"""Exception semantics: which shapes of a bare exception are version skew, and what each names."""

from __future__ import annotations

import pytest

from triage_bot.core import default_triager
from triage_bot.kb.schema import AREA_MODEL
from triage_bot.matching.exceptions import (
    EnginePackages,
    area_of_object,
    missing_submodule,
    read_exception,
    version_skew,
)
from triage_bot.text.normalize import normalize

PACKAGES = default_triager().kb.engine_packages  # from the knowledge files: vllm, sglang, tensorrt_llm
FRAME = '  File "/usr/local/lib/python3.12/site-packages/{pkg}/x.py", line 3, in f\n    g()\n'


def skew_of(text: str, engine: str | None = "vllm") -> tuple[str, str, str] | None:
    norm = normalize(text)
    raised = read_exception(norm)
    assert raised is not None
    found = version_skew(norm, raised, EnginePackages.of(PACKAGES, engine))
    return (found.package, found.other, found.name) if found else None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a name another package no longer (or not yet) has
        (
            FRAME.format(pkg="vllm") + "ImportError: cannot import name 'Qwen3Config' from 'transformers'",
            ("transformers", "vllm", "Qwen3Config"),
        ),
        # a plugin built for another engine release
        (
            FRAME.format(pkg="vllm_ascend")
            + "ImportError: cannot import name 'SamplerOutput' from 'vllm.model_executor.layers.sampler'",
            ("vllm", "vllm_ascend", "SamplerOutput"),
        ),
        (
            FRAME.format(pkg="vllm")
            + "AttributeError: module 'triton.language' has no attribute 'constexpr_function'",
            ("triton", "vllm", "constexpr_function"),
        ),
        # transformers changed a config class
        (
            FRAME.format(pkg="vllm")
            + "AttributeError: 'Qwen2VLConfig' object has no attribute 'rope_scaling'",
            ("transformers", "vllm", "rope_scaling"),
        ),
        # an argument error raised inside another package's code
        (
            FRAME.format(pkg="vllm")
            + FRAME.format(pkg="flashinfer")
            + "TypeError: plan() got an unexpected keyword argument 'kv_data_type'",
            ("flashinfer", "vllm", "kv_data_type"),
        ),
        (
            FRAME.format(pkg="sglang")
            + "ModuleNotFoundError: No module named 'transformers.models.glm4v_moe'",
            ("transformers", "vllm", "transformers.models.glm4v_moe"),
        ),
    ],
)
def test_skew_names_both_packages(text: str, expected: tuple[str, str, str]) -> None:
    assert skew_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        FRAME.format(pkg="vllm") + "AttributeError: 'NoneType' object has no attribute 'shape'",  # a bug
        FRAME.format(pkg="vllm")
        + "AttributeError: 'ModelConfig' object has no attribute 'hf_text_config'",  # engine's own
        FRAME.format(pkg="vllm")
        + "TypeError: forward() got an unexpected keyword argument 'positions'",  # engine code
        FRAME.format(pkg="vllm")
        + "ImportError: cannot import name 'x' from 'vllm.lora'",  # one package with itself
        FRAME.format(pkg="vllm") + "KeyError: 'model.layers.0.weight'",
    ],
)
def test_the_same_shapes_in_the_engines_own_code_are_not_skew(text: str) -> None:
    assert skew_of(text) is None


def test_a_missing_top_level_module_is_not_skew_but_a_missing_submodule_is() -> None:
    assert (
        missing_submodule(normalize("No module named 'flash_attn'"), EnginePackages.of(PACKAGES, "vllm"))
        is None
    )
    found = missing_submodule(
        normalize("Ignore import error: No module named 'transformers.models.x'"),
        EnginePackages.of(PACKAGES, "sglang"),
    )
    assert found is not None and (found.package, found.other) == ("transformers", "sglang")


def test_the_root_cause_is_the_first_exception_that_is_not_a_wrapper() -> None:
    text = (
        "KeyError: 'w'\n\nThe above exception was the direct cause of the following exception:\n"
        "RuntimeError: Engine core initialization failed. See root cause above."
    )
    raised = read_exception(normalize(text))
    assert raised is not None and (raised.cls, raised.message) == ("KeyError", "'w'")


def test_an_exception_quoted_in_prose_or_markdown_is_read() -> None:
    raised = read_exception(
        normalize(
            "it fails with **AttributeError: 'Glm4vForConditionalGeneration' object has no attribute 'x'**"
        )
    )
    assert raised is not None and raised.cls == "AttributeError"
    assert area_of_object(raised) == (AREA_MODEL, "Glm4vForConditionalGeneration")


def test_versions_in_the_paste_fill_the_answer() -> None:
    paste = (
        FRAME.format(pkg="vllm") + "AttributeError: 'Qwen2VLConfig' object has no attribute 'rope_scaling'\n"
        "vllm==0.10.1\ntransformers==4.57.1\n"
    )
    answer = default_triager().triage(paste)
    assert answer.match is not None and answer.match.id == "install.dependency_version_mismatch"
    assert "vllm 0.10.1 expects a transformers that has `rope_scaling`" in answer.recovery
    assert "transformers 4.57.1" in answer.recovery
    assert 'pip install "vllm==0.10.1"' in answer.commands[-2]
