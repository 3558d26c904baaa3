"""Computed advice for vLLM signatures: the recovery must carry numbers worked out from the paste.

The cases that check only the answer's signature, values and pieces of the recovery live beside
their signatures, as examples in knowledge/vllm.yaml (checked by `kb lint` and
tests/test_signature_examples.py). The tests left here check what an example cannot state.

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


# -- missing numbers still give a usable command ----------------------------------------------


def test_truncated_v1_kv_message_renders_a_placeholder_command() -> None:
    # the head of vllm-008, cut before the GiB figures
    text = (
        "ValueError: To serve at least one request with the models's max seq len (1048576), (24.00 GiB KV ca"
    )
    answer = _answer(text, "vllm.max_model_len_exceeds_kv_cache")
    command = next(c for c in answer.commands if "--max-model-len" in c)
    assert "<" in command and ">" in command


# -- templates do not depend on a detected engine ---------------------------------------------


@pytest.mark.parametrize("engine", [None, "", "sglang"])
def test_every_vllm_recovery_renders_without_values_or_engine(engine: str | None) -> None:
    import yaml

    data = yaml.safe_load((DEFAULT_DIR / "vllm.yaml").read_text(encoding="utf-8"))
    for sig in data["signatures"]:
        text = render(sig["recovery"], {}, engine)
        assert text.strip(), sig["id"]
        assert "{{" not in text and "{%" not in text, sig["id"]
