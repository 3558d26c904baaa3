"""knowledge/health.yaml: valid, and each example (the bot's own alert line) matches its signature."""

from __future__ import annotations

import shutil

import pytest

from tests.support.knowledge import write_kb
from triage_bot.core import Triager
from triage_bot.health.rules import SIGNATURES
from triage_bot.kb.loader import DEFAULT_DIR, load

HEALTH = DEFAULT_DIR / "health.yaml"


@pytest.fixture(scope="module")
def triager(tmp_path_factory) -> Triager:
    # the engines health.yaml has texts for: their headers, without their signatures
    headers = {
        f"{engine}.yaml": f"engine:\n  id: {engine}\n  name: {engine}\n  detect:\n    - {{pattern: '{engine}/'}}\n"
        for engine in ("sglang", "trtllm")
    }
    directory = write_kb(tmp_path_factory.mktemp("kb"), **headers)
    shutil.copy(HEALTH, directory / "health.yaml")
    return Triager(load(directory))


def test_every_state_has_a_signature_with_engine_recoveries(triager: Triager) -> None:
    for sig_id in SIGNATURES.values():
        sig = triager.kb.get(sig_id)
        assert sig is not None, sig_id
        assert isinstance(sig.recovery, dict) and {"vllm", "sglang", "trtllm", "default"} <= set(sig.recovery)
        assert len(sig.examples) >= 2 and sig.faq


def test_examples_match_their_own_signature(triager: Triager) -> None:
    for sig_id in SIGNATURES.values():
        for example in triager.kb.get(sig_id).example_texts:
            result = triager.match(example)
            assert result.primary is not None and result.primary.sig.id == sig_id, (sig_id, example)


def test_the_lines_the_monitor_writes_match(triager: Triager) -> None:
    from datetime import UTC, datetime

    from triage_bot.health.config import Thresholds
    from triage_bot.health.observation import Observation
    from triage_bot.health.rules import EngineMemory, evaluate

    o = Observation("llama-prod", "vllm", datetime.now(UTC), "refused", detail="connection refused")
    (finding,) = evaluate(o, EngineMemory(), Thresholds()).values()
    answer = triager.triage(finding.message)
    assert answer.match is not None and answer.match.id == "health.engine_down"
    assert answer.match.values.get("engine") == "llama-prod"
