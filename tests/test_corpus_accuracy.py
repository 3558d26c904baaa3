"""Accuracy on the shared corpus, with the thresholds the project is held to."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage_bot.core import default_triager
from triage_bot.evaluation import Evaluation, evaluate


@pytest.fixture(scope="module")
def evaluation() -> Evaluation:
    from tests.support.knowledge import CORPUS

    if not (CORPUS / "errors.jsonl").exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return evaluate(default_triager(), Path(CORPUS))


def test_explicit_top1_on_errors(evaluation: Evaluation) -> None:
    assert evaluation.errors.top1() >= 0.95, evaluation.errors.confused()


def test_passive_recall_on_errors(evaluation: Evaluation) -> None:
    assert evaluation.errors.passive_recall() >= 0.90


def test_passive_false_positives_on_negatives(evaluation: Evaluation) -> None:
    fired = [r.case for r in evaluation.negatives.results if r.passive]
    assert evaluation.negatives.passive_rate() <= 0.01, fired


def test_explicit_top1_on_fresh_with_evidence(evaluation: Evaluation) -> None:
    assert evaluation.fresh_evidence.top1() >= 0.85, evaluation.fresh_evidence.confused()


def test_confidence_is_calibrated_where_it_claims_to_be_sure(evaluation: Evaluation) -> None:
    """Answers the bot gives with >= 0.8 confidence are right at least 90% of the time."""
    sure = [
        r for s in (evaluation.errors, evaluation.fresh_evidence) for r in s.results if r.confidence >= 0.8
    ]
    assert sure, "no confident answers at all"
    assert sum(r.correct for r in sure) / len(sure) >= 0.9
