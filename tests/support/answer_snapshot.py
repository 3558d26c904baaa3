"""The answers the bot gives on every held-out paste and on big built pastes, as a reviewable file.

A speed change must not change an answer; a knowledge change shows, in this file's diff, every
answer it changed. `tests/matching/test_answer_snapshot.py` compares; regenerate after an intended
change with:

    .venv/bin/python -m tests.support.answer_snapshot --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from tests.support.pastes import big_pastes, distinct_texts
from triage_bot.core import Triager

SNAPSHOT = Path(__file__).resolve().parents[1] / "matching" / "answers.jsonl"


def key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:16]


def pastes() -> list[str]:
    """The held-out pastes, 40 pastes of 40,000 characters and two of 1 MiB."""
    return [*distinct_texts(), *big_pastes(40, 40_000), *big_pastes(2, 1 << 20, seed=11)]


def answer_row(triager: Triager, text: str) -> dict:
    answer = triager.triage(text)
    whole = json.dumps(answer.to_dict(), sort_keys=True, default=str)
    match = answer.match
    return {
        "paste": key(text),
        "id": match.id if match else None,
        "confidence": match.confidence if match else None,
        "engine": answer.engine,
        "rule": answer.rule,
        "passive": answer.passive,
        "candidates": [c.id for c in answer.candidates],
        "answer": hashlib.sha1(whole.encode()).hexdigest()[:16],
    }


def collect(triager: Triager) -> list[dict]:
    return [answer_row(triager, text) for text in pastes()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write {SNAPSHOT.name}")
    args = parser.parse_args()
    rows = collect(Triager.from_directory())
    text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
    if args.write:
        SNAPSHOT.write_text(text, encoding="utf-8")
        print(f"wrote {len(rows)} answers to {SNAPSHOT}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
