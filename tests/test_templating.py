"""Recovery templates render in a sandbox; missing values become visible placeholders."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError

from triage_bot.templating import render


def test_arithmetic_with_values() -> None:
    out = render(
        "--max-model-len {{ (v.n * v.a / v.b) | round_down(256) }}", {"n": 32768, "a": 4.0, "b": 8.0}, None
    )
    assert out == "--max-model-len 16384"


def test_missing_value_is_a_placeholder_even_through_arithmetic() -> None:
    out = render("--max-model-len {{ (v.n * v.a / v.b) | round_down(256) }} for {{ v.model }}", {}, None)
    assert out == "--max-model-len <n> for <model>"


def test_conditionals_see_missing_values_as_false() -> None:
    assert render("{% if v.x %}have {{ v.x }}{% else %}none{% endif %}", {}, None) == "none"
    assert render("{% if v.x %}have {{ v.x }}{% else %}none{% endif %}", {"x": 3}, None) == "have 3"


def test_user_text_in_values_is_never_evaluated() -> None:
    out = render("model {{ v.model }}", {"model": "{{ 7*7 }}"}, None)
    assert out == "model {{ 7*7 }}"


def test_sandbox_blocks_attribute_escapes() -> None:
    with pytest.raises(SecurityError):
        render("{{ v.__class__.__mro__[1].__subclasses__() }}", {}, None)


def test_filters() -> None:
    assert render(
        "{{ 0.873 | fixed(2) }} {{ 13 | round_up(8) }} {{ 1.7 | clamp(0, 0.95) }} {{ '7.9' | to_int }}",
        {},
        None,
    ) == ("0.87 16 0.95 7")


def test_an_answer_links_only_its_own_engines_docs() -> None:
    """A signature for every engine lists every engine's pages; the answer keeps the paste's engine's."""
    from triage_bot.core import default_triager

    kb = default_triager().kb
    sig = kb.get("generic.cuda_oom")
    assert sig is not None and any("docs.vllm.ai" in u for u in sig.docs)
    assert any("nvidia.github.io/TensorRT-LLM" in u for u in sig.docs)
    trt = default_triager().triage(
        "[TensorRT-LLM][ERROR] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 0 has a total capacity of 79.15 GiB of which 1.12 GiB is free.\n"
        '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/pyexecutor/py_executor.py", line 1'
    )
    assert trt.match is not None and trt.match.id == "generic.cuda_oom" and trt.engine == "trtllm"
    assert trt.docs and not any("docs.vllm.ai" in u for u in trt.docs)
    bare = default_triager().triage("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert bare.engine is None and bare.docs == list(sig.docs)  # no engine in sight: every link stays
