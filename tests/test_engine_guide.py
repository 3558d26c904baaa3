"""The engine decision guide: hardware rules engines out, needs rank the rest, ties are said, and a
question that names nothing the guide knows gets the comparison matrix instead of a verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from triage_bot.cli.main import cli
from triage_bot.core import default_triager
from triage_bot.engine_guide import describe, read_question, recommend

KNOWLEDGE = Path(__file__).resolve().parents[1] / "triage_bot" / "knowledge"


def _kb():
    return default_triager().kb


@pytest.mark.parametrize(
    ("question", "engine"),
    [
        ("H100, 70B, the lowest latency we can get", "trtllm"),
        ("MI300X, multi-turn agents with JSON output", "sglang"),
        ("we serve 40 LoRA adapters on one base model on A100s", "vllm"),
        ("easiest way to try Hugging Face models on an RTX 4090", "vllm"),
        ("Qwen3 235B-A22B MoE across 16 H200", "sglang"),
        ("Trainium", "vllm"),
    ],
)
def test_the_recommendation_follows_what_the_question_names(question: str, engine: str) -> None:
    rec = recommend(_kb(), question)
    assert rec is not None and rec.best is not None
    assert rec.best.engine.id == engine, describe(rec)


def test_hardware_rules_an_engine_out_and_says_why() -> None:
    rec = recommend(_kb(), "we have MI355X nodes and need the lowest latency")
    assert rec is not None and rec.best is not None
    assert rec.best.engine.id != "trtllm"
    [out] = rec.ruled_out
    assert (out.engine.id, out.missing) == ("trtllm", ["AMD GPUs (ROCm)"])
    assert "Ruled out: TensorRT-LLM does not run on AMD GPUs (ROCm)." in describe(rec)


def test_a_tie_is_said_not_hidden() -> None:
    rec = recommend(_kb(), "DeepSeek V3 on 16 H200, maximum throughput")
    assert rec is not None and rec.best is not None and rec.tie
    said = "\n".join(describe(rec))
    assert "fit as well; choose by what you already run." in said


def test_caveats_come_up_only_for_the_hardware_they_are_about() -> None:
    on_nvidia = recommend(_kb(), "MoE on H100")
    on_ascend = recommend(_kb(), "MoE on Ascend 910B")
    assert on_nvidia is not None and on_ascend is not None
    assert on_nvidia.caveats == []
    assert on_ascend.best is not None and on_ascend.caveats, describe(on_ascend)


def test_numbers_that_are_not_model_sizes_are_not_read_as_one() -> None:
    keys = [n.key for n in read_question(_kb(), "Ascend 910B, a 7B model")]
    assert keys == ["ascend"]
    assert "large_moe" in [n.key for n in read_question(_kb(), "a 405B model")]


def test_a_question_that_names_nothing_gets_the_matrix_and_how_to_ask() -> None:
    assert recommend(_kb(), "which one is best?") is None
    shown = CliRunner().invoke(cli, ["engines", "which", "one", "is", "best?"])
    assert shown.exit_code == 0
    assert shown.output.startswith("I could not tell what you need from that.")
    assert "KV cache management" in shown.output


def test_the_cli_prints_and_exports_the_recommendation() -> None:
    runner = CliRunner()
    text = runner.invoke(cli, ["engines", "H100", "lowest", "latency"], env={"COLUMNS": "80"})
    assert text.exit_code == 0 and "Recommended: TensorRT-LLM." in text.output
    assert max(len(line) for line in text.output.splitlines()) <= 80
    data = json.loads(runner.invoke(cli, ["engines", "--json", "MI300X", "agents"]).output)
    assert data["recommendation"]["recommended"]["engine"] == "sglang"
    assert data["recommendation"]["ruled_out"][0]["engine"] == "trtllm"
    assert "engines" in data and "dimensions" in data


def test_kb_lint_rejects_a_guide_that_names_an_unknown_need(tmp_path: Path) -> None:
    copy = tmp_path / "knowledge"
    shutil.copytree(KNOWLEDGE, copy)
    vllm = copy / "vllm.yaml"
    vllm.write_text(
        vllm.read_text(encoding="utf-8").replace("      lora: ", "      warp_drive: ", 1), encoding="utf-8"
    )
    result = CliRunner().invoke(cli, ["kb", "lint", "--quiet", "--directory", str(copy)])
    assert result.exit_code == 1
    assert "engine guide: 'warp_drive' is not a need in faq.yaml guide_needs" in result.output
