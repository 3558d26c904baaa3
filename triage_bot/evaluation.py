"""Measure the matcher on a labelled corpus: the numbers the issue tracker and CI hold it to.

- explicit top-1: the best match equals the label (or one of the case's `also` ids);
- passive recall: the bot would answer unprompted, and correctly;
- passive false positives: the bot would answer a message it must leave alone;
- calibration: in each confidence bin, how often the explicit answer was right.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage_bot.core import Triager

CHECKOUT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = CHECKOUT.parent / "shared" / "corpus"
# the project's own never-tuned set: the newest third of real threads taken as they came
HOLDOUT_TEST = CHECKOUT / "tests" / "holdout" / "traffic_test"
SPECIFIC_TIERS = ("vllm", "sglang", "trtllm", "generic", "health")


def default_corpus() -> Path | None:
    """The shared development corpus when it sits beside the checkout, else the project's held-out set."""
    for candidate in (DEFAULT_CORPUS, HOLDOUT_TEST):
        if (candidate / "errors.jsonl").is_file():
            return candidate
    return None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@dataclass
class CaseResult:
    case: str
    label: str | None
    predicted: str | None
    confidence: float
    passive: bool
    correct: bool
    engine: str | None
    evidence: bool = True  # the paste alone shows its failure (False: cut before the cause)

    @property
    def specific(self) -> bool:
        return self.label is not None and self.label.split(".", 1)[0] in SPECIFIC_TIERS


@dataclass
class SetReport:
    name: str
    results: list[CaseResult] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.results)

    def top1(self) -> float:
        return sum(r.correct for r in self.results) / self.total if self.total else 0.0

    def subset(self, name: str, keep: Any) -> SetReport:
        return SetReport(f"{self.name} {name}", [r for r in self.results if keep(r)])

    def calibration(
        self, edges: tuple[float, ...] = (0.0, 0.4, 0.6, 0.8, 1.0001)
    ) -> list[tuple[float, float, int, float]]:
        """(low, high, answers, share right) per confidence band, over the explicit answers."""
        answered = [r for r in self.results if r.predicted]
        table = []
        for low, high in itertools.pairwise(edges):
            inside = [r for r in answered if low <= r.confidence < high]
            table.append(
                (
                    low,
                    min(high, 1.0),
                    len(inside),
                    sum(r.correct for r in inside) / len(inside) if inside else 0.0,
                )
            )
        return table

    def passive_recall(self) -> float:
        return sum(r.correct and r.passive for r in self.results) / self.total if self.total else 0.0

    def passive_rate(self) -> float:
        return sum(r.passive for r in self.results) / self.total if self.total else 0.0

    def confused(self, limit: int = 10) -> list[tuple[tuple[str, str], int]]:
        pairs = Counter((r.label or "", r.predicted or "none") for r in self.results if not r.correct)
        return pairs.most_common(limit)

    def per_id(self) -> dict[str, tuple[int, int]]:
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in self.results:
            counts[r.label or ""][0] += r.correct
            counts[r.label or ""][1] += 1
        return {k: (v[0], v[1]) for k, v in sorted(counts.items())}


def _run(triager: Triager, name: str, rows: list[dict[str, Any]]) -> SetReport:
    report = SetReport(name)
    for row in rows:
        result = triager.match(row["text"])
        predicted = result.primary.sig.id if result.primary else None
        label = row.get("label")
        accepted = {label, *row.get("also", [])} if label else set()
        report.results.append(
            CaseResult(
                case=row["case"],
                label=label,
                predicted=predicted,
                confidence=result.primary.confidence if result.primary else 0.0,
                passive=result.passive,
                correct=predicted in accepted if label else predicted is None,
                engine=result.engine,
                evidence=bool(row.get("evidence", True)),
            )
        )
    return report


@dataclass
class Evaluation:
    errors: SetReport
    fresh_evidence: SetReport
    fresh_cut: SetReport
    negatives: SetReport

    def calibration(self, bins: int = 5) -> list[tuple[float, float, int, float]]:
        """(bin low, bin high, count, accuracy) over every explicit answer on the labelled sets."""
        rows = [r for s in (self.errors, self.fresh_evidence) for r in s.results if r.predicted]
        table = []
        for b in range(bins):
            low, high = b / bins, (b + 1) / bins
            inside = [
                r for r in rows if low <= r.confidence < high or (b == bins - 1 and r.confidence == 1.0)
            ]
            accuracy = sum(r.correct for r in inside) / len(inside) if inside else 0.0
            table.append((low, high, len(inside), accuracy))
        return table

    def summary(self) -> dict[str, Any]:
        return {
            "errors_top1": round(self.errors.top1(), 4),
            "errors_passive_recall": round(self.errors.passive_recall(), 4),
            "negatives_passive_fp": round(self.negatives.passive_rate(), 4),
            "fresh_evidence_top1": round(self.fresh_evidence.top1(), 4),
            "fresh_cut_top1": round(self.fresh_cut.top1(), 4),
            "errors_evidence_top1": round(self.errors.subset("evidence", lambda r: r.evidence).top1(), 4),
            "errors_specific_top1": round(self.errors.subset("specific", lambda r: r.specific).top1(), 4),
            "errors_family_top1": round(self.errors.subset("family", lambda r: not r.specific).top1(), 4),
            "calibration": [
                {"low": lo, "high": hi, "answers": n, "right": round(acc, 4)}
                for lo, hi, n, acc in self.errors.calibration()
            ],
            "counts": {
                "errors": self.errors.total,
                "fresh_evidence": self.fresh_evidence.total,
                "fresh_cut": self.fresh_cut.total,
                "negatives": self.negatives.total,
            },
        }


def _read_optional(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path) if path.is_file() else []


def evaluate(triager: Triager, corpus: Path = DEFAULT_CORPUS) -> Evaluation:
    errors = read_jsonl(corpus / "errors.jsonl")
    fresh = _read_optional(corpus / "fresh.jsonl")
    negatives = [dict(row, label=None) for row in _read_optional(corpus / "negatives.jsonl")]
    return Evaluation(
        errors=_run(triager, "errors", errors),
        fresh_evidence=_run(triager, "fresh (evidence)", [r for r in fresh if r.get("evidence")]),
        fresh_cut=_run(triager, "fresh (cut before cause)", [r for r in fresh if not r.get("evidence")]),
        negatives=_run(triager, "negatives", negatives),
    )
