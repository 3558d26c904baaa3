"""Matching rules on a tiny knowledge base: cause over wrapper, families, values, engine clues."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage_bot.core import Triager


@pytest.fixture
def triager(mini_kb_dir: Path) -> Triager:
    return Triager.from_directory(mini_kb_dir)


def test_root_cause_beats_wrapper(triager: Triager) -> None:
    paste = (
        "(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1] ValueError: No available memory for the cache blocks.\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."
    )
    answer = triager.triage(paste)
    assert answer.match is not None and answer.match.id == "vllm.kv_cache_no_memory"
    assert [o.id for o in answer.others] == []
    assert not answer.incomplete


def test_wrapper_alone_asks_for_the_lines_above(triager: Triager) -> None:
    answer = triager.triage("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.")
    assert answer.match is not None and answer.match.id == "vllm.engine_core_dead"
    assert answer.incomplete
    assert "above" in answer.note


def test_family_from_frames(triager: Triager) -> None:
    paste = 'Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/vllm/lora/models.py", line 3\nKeyError: "w"'
    answer = triager.triage(paste)
    assert answer.match is not None and answer.match.id == "component.lora"
    assert answer.match.tier == "family"
    assert answer.protocol is not None and answer.protocol.confirm


def test_values_from_paste_fill_the_command(triager: Triager) -> None:
    paste = "vllm serve meta/llama --gpu-memory-utilization 0.5\nValueError: No available memory for the cache blocks."
    answer = triager.triage(paste)
    assert answer.match is not None
    assert answer.match.values["model"] == "meta/llama"
    assert "vllm serve meta/llama" in answer.commands[0]


def test_missing_values_render_placeholders(triager: Triager) -> None:
    answer = triager.triage("No available memory for the cache blocks")
    assert answer.commands == ["vllm serve <model> --gpu-memory-utilization <util>"]


def test_chatter_gets_no_match(triager: Triager) -> None:
    answer = triager.triage("lgtm, merging")
    assert answer.match is None and not answer.passive


def test_engine_detected_from_clues(triager: Triager) -> None:
    result = triager.match('File "/opt/vllm/engine.py", line 1\nRuntimeError: x')
    assert result.engine == "vllm"


def test_json_contract(triager: Triager) -> None:
    data = triager.triage("No available memory for the cache blocks").to_dict()
    assert set(data) == {"match", "candidates", "answer"}
    assert set(data["match"]) == {"id", "engine", "title", "confidence", "line", "values"}
    assert 0.0 <= data["match"]["confidence"] <= 1.0


def test_family_answer_serialises_with_its_protocol(triager: Triager) -> None:
    import json

    paste = 'Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/vllm/lora/models.py", line 3\nKeyError: "w"'
    data = json.loads(json.dumps(triager.triage(paste).to_dict()))
    assert data["answer"]["protocol"]["confirm"] == ["Run without --enable-lora."]


def test_weak_pattern_ranks_below_an_exact_message(tmp_path: Path) -> None:
    from tests.support.knowledge import MINI_ENGINE, write_kb

    weak = MINI_ENGINE.replace(
        "    patterns: ['EngineDeadError']",
        "    patterns: ['EngineDeadError', {pattern: 'GPU blocks: 0', weak: true}]",
    ).replace("        wrapper: true\n", "", 1)
    triager = Triager.from_directory(write_kb(tmp_path / "kb", **{"vllm.yaml": weak}))
    inferred = triager.match("INFO # GPU blocks: 0, # CPU blocks: 512")
    assert inferred.primary is not None and inferred.primary.sig.id == "vllm.engine_core_dead"
    assert inferred.primary.how == "context" and inferred.primary.confidence <= 0.72
    assert not inferred.passive
    both = triager.match("# GPU blocks: 0\nValueError: No available memory for the cache blocks.")
    assert both.primary is not None and both.primary.sig.id == "vllm.kv_cache_no_memory"
