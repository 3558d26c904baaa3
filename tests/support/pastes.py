"""Pastes for the answer snapshot and the benchmarks: every held-out paste, and big ones built from them.

Big pastes are built from real pieces with a fixed seed, so every run builds the same ones: a
held-out error placed among real engine logs and discussions (the held-out negatives) until the
paste reaches the wanted size.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from triage_bot.evaluation import read_jsonl

HOLDOUT = Path(__file__).resolve().parents[1] / "holdout"


def rows(kind: str | None = None) -> Iterator[dict]:
    """Every held-out row (errors, fresh reports, negatives), set by set in a fixed order."""
    for path in sorted(HOLDOUT.glob("*/*.jsonl")):
        if path.stem not in ("errors", "fresh", "negatives"):
            continue  # faq/questions.jsonl holds questions, not pastes
        if kind is None or path.stem == kind:
            yield from read_jsonl(path)


def distinct_texts() -> list[str]:
    """Each held-out paste once, in a fixed order."""
    seen: dict[str, None] = {}
    for row in rows():
        seen.setdefault(row["text"], None)
    return list(seen)


def big_pastes(count: int, size: int, seed: int = 7) -> list[str]:
    """`count` distinct pastes of about `size` characters: one held-out error among real log text."""
    rng = random.Random(seed)
    errors = [row["text"] for row in rows("errors")]
    filler = [row["text"] for row in rows("negatives") if len(row["text"]) > 300]
    out: list[str] = []
    for _ in range(count):
        parts: list[str] = []
        while sum(map(len, parts)) < size - 2_000:
            parts.append(rng.choice(filler))
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(errors))
        out.append("\n".join(parts)[:size])
    return out
