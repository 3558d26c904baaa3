"""Every held-out paste, and big built ones, get the answers recorded in answers.jsonl.

Speed work must not change an answer. A knowledge change that does shows each changed answer in
the file's diff: regenerate with `.venv/bin/python -m tests.support.answer_snapshot --write` and
review it.
"""

from __future__ import annotations

import json

from tests.support.answer_snapshot import SNAPSHOT, collect
from triage_bot.core import default_triager


def _recorded() -> list[dict]:
    return [json.loads(line) for line in SNAPSHOT.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_answers_are_the_recorded_ones() -> None:
    recorded = _recorded()
    current = collect(default_triager())
    assert [r["paste"] for r in current] == [r["paste"] for r in recorded], "the pastes changed: regenerate"
    changed = [(old, new) for old, new in zip(recorded, current, strict=True) if old != new]
    shown = "\n".join(f"{old}\n  -> {new}" for old, new in changed[:10])
    # ties among near matches were once broken by a set's order, which changes with each process's
    # hash seed: a change seen here in only some runs means an order that is not fixed
    assert not changed, f"{len(changed)} answers changed (regenerate if intended):\n{shown}"
