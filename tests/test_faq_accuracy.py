"""The FAQ search on real questions it was never tuned on (tests/holdout/faq, gathered 2026-12-02
from the engines' trackers and forums as they came, plus ten off-topic questions): which entry it
gives, and whether it stays quiet when no entry answers. The floors sit just under the measured
values; issue 12's target is 0.9 and silence on every off-topic question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage_bot import faq
from triage_bot.core import default_triager

QUESTIONS = Path(__file__).parent / "holdout" / "faq" / "questions.jsonl"


@pytest.fixture(scope="module")
def answered() -> list[tuple[dict[str, str | None], str | None]]:
    kb = default_triager().kb
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 60
    out = []
    for row in rows:
        hits = faq.search(kb, row["question"])
        out.append((row, hits[0].id if hits else None))
    return out


def test_questions_with_an_entry_get_it(answered) -> None:
    with_entry = [(row, got) for row, got in answered if row["faq"]]
    right = sum(got == row["faq"] for row, got in with_entry) / len(with_entry)
    assert right >= 0.24, right  # measured 0.255 (14 of 55)


def test_questions_without_an_entry_get_none(answered) -> None:
    without = [(row, got) for row, got in answered if not row["faq"]]
    quiet = sum(got is None for _, got in without) / len(without)
    assert quiet >= 0.70, quiet  # measured 0.72 (26 of 36)
