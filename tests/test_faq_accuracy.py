"""The FAQ search on real questions (gathered 2026-12-02 from the engines' trackers and forums as
they came, plus off-topic ones): which entry it gives, and whether it stays quiet when no entry
answers. `faq/` was never tuned on; `faq_tune/` (other threads) was. The floors sit just under
the measured values; issue 12's target is 0.9 and silence on every off-topic question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage_bot import faq
from triage_bot.core import default_triager

HOLDOUT = Path(__file__).parent / "holdout"


def answered(name: str) -> list[tuple[dict[str, str | None], str | None]]:
    kb = default_triager().kb
    path = HOLDOUT / name / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 60
    out = []
    for row in rows:
        hits = faq.search(kb, row["question"])
        out.append((row, hits[0].id if hits else None))
    return out


def shares(name: str) -> tuple[float, float]:
    """(right entry among questions that have one, silence among those that have none)."""
    rows = answered(name)
    with_entry = [(row, got) for row, got in rows if row["faq"]]
    without = [(row, got) for row, got in rows if not row["faq"]]
    right = sum(got == row["faq"] for row, got in with_entry) / len(with_entry)
    quiet = sum(got is None for _, got in without) / len(without)
    return right, quiet


def test_never_tuned_questions() -> None:
    """`faq/`: measured 0.255 and 26 of 36 quiet when gathered, 0.418 and 28 of 36 after the
    tuning round on `faq_tune/`."""
    right, quiet = shares("faq")
    assert right >= 0.40, right
    assert quiet >= 0.75, quiet


@pytest.mark.parametrize(("floor_right", "floor_quiet"), [(0.50, 0.62)])
def test_the_tuning_questions_do_not_regress(floor_right: float, floor_quiet: float) -> None:
    """`faq_tune/`: 0.14 and 15 of 26 quiet before the round, 0.52 and 17 of 26 after."""
    right, quiet = shares("faq_tune")
    assert right >= floor_right, right
    assert quiet >= floor_quiet, quiet
