"""Which engine to choose: a recommendation from the hardware, model size, goal and features a
question names, with the reasons, the alternatives and what each is ruled out for.

Why a small rule set and not a score soup: people act on this answer, so every line of it has to
be a sentence from the knowledge base that they can check. The rules, in order:

1. hardware rules out: an engine whose guide does not list every hardware the question names is
   not recommended, and the answer says why (TensorRT-LLM runs on NVIDIA GPUs only);
2. needs rank the rest: a need the engine is `best_at` counts 1, one it does `also` counts 0.5;
3. a tie goes to the engine that is best at more of the needs, then to the knowledge base's
   engine order; the tie is said, so nobody reads a coin toss as a verdict;
4. a question that names neither hardware nor a need gets no recommendation (the surfaces show the
   comparison matrix and say what to ask).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage_bot.kb.loader import KnowledgeBase
    from triage_bot.kb.schema import EngineInfo, GuideNeed

BEST, ALSO = 1.0, 0.5


@dataclass(frozen=True)
class Candidate:
    """One engine as the guide weighs it for this question."""

    engine: EngineInfo
    score: float
    reasons: list[str]  # why it suits what was asked, best_at first
    missing: list[str]  # the asked hardware it does not run on (ruled out when any)

    @property
    def ruled_out(self) -> bool:
        return bool(self.missing)


@dataclass(frozen=True)
class Recommendation:
    asked: list[GuideNeed]  # what the question was read as, in the knowledge base's order
    best: Candidate | None  # None when every engine is ruled out
    others: list[Candidate] = field(default_factory=list)  # the eligible rest, best first
    ruled_out: list[Candidate] = field(default_factory=list)
    tie: bool = False  # the runner-up scored the same
    hardware: list[str] = field(default_factory=list)  # the titles of the hardware asked for
    caveats: list[str] = field(default_factory=list)  # the recommended engine's, for this question

    def to_dict(self) -> dict[str, object]:
        def one(c: Candidate) -> dict[str, object]:
            return {"engine": c.engine.id, "score": c.score, "reasons": c.reasons, "missing": c.missing}

        return {
            "asked": [{"key": n.key, "kind": n.kind, "title": n.title} for n in self.asked],
            "recommended": None if self.best is None else one(self.best),
            "caveats": self.caveats,
            "others": [one(c) for c in self.others],
            "ruled_out": [one(c) for c in self.ruled_out],
            "tie": self.tie,
        }


def read_question(kb: KnowledgeBase, question: str) -> list[GuideNeed]:
    """The hardware and needs a question names, each once, in the knowledge base's order."""
    return [n for n in kb.guide_needs if re.search(n.pattern, question, re.IGNORECASE)]


def recommend(kb: KnowledgeBase, question: str) -> Recommendation | None:
    """The engine to choose for what `question` names, or None when it names nothing the guide knows."""
    asked = read_question(kb, question)
    if not asked:
        return None
    hardware = [n for n in asked if n.kind == "hardware"]
    needs = [n for n in asked if n.kind == "need"]
    titles = {n.key: n.title for n in kb.guide_needs}
    candidates = []
    for engine in sorted(kb.engines.values(), key=lambda e: (e.order, e.id)):
        guide = engine.guide
        if guide is None:
            continue
        missing = [titles[h.key] for h in hardware if h.key not in guide.hardware]
        best = [guide.best_at[n.key] for n in needs if n.key in guide.best_at]
        also = [guide.also[n.key] for n in needs if n.key in guide.also and n.key not in guide.best_at]
        score = BEST * len(best) + ALSO * len(also)
        candidates.append((Candidate(engine, score, best + also, missing), len(best)))
    eligible = [c for c in candidates if not c[0].ruled_out]
    # stable sort: equal scores and equal best_at counts keep the engine order
    eligible.sort(key=lambda c: (-c[0].score, -c[1]))
    ruled_out = [c for c, _ in candidates if c.ruled_out]
    named = [h.title for h in hardware]
    if not eligible:
        return Recommendation(asked, None, [], ruled_out, hardware=named)
    (first, first_best), *rest = eligible
    tied = [c for c, b in rest if (c.score, b) == (first.score, first_best)]
    others = tied + [c for c, _ in rest if c not in tied]  # the tied ones first, in engine order
    keys = {h.key for h in hardware}
    guide = first.engine.guide
    caveats = [c.text for c in (guide.caveats if guide else []) if not c.when or keys & set(c.when)]
    return Recommendation(asked, first, others, ruled_out, bool(tied) and first.score > 0, named, caveats)


def describe(rec: Recommendation) -> list[str]:
    """The recommendation as plain sentences (the terminal prints them; Slack escapes and bolds)."""
    asked = ", ".join(n.title for n in rec.asked)
    lines = [f"Read as: {asked}."]
    if rec.best is None:
        lines.append("No engine in the knowledge base runs on all of that hardware.")
    else:
        best = rec.best
        lines.append(f"Recommended: {best.engine.name}.")
        runs_on = f"it runs on {', '.join(rec.hardware)}" if rec.hardware else "the general choice"
        lines += [f"  - {reason}" for reason in best.reasons] or [f"  - {runs_on}"]
        if rec.tie:
            tied = [c.engine.name for c in rec.others if c.score == best.score]
            lines.append(f"{' and '.join(tied)} fit as well; choose by what you already run.")
        lines += [f"  Note: {caveat}" for caveat in rec.caveats]
        for other in rec.others:
            why = other.reasons[0] if other.reasons else runs_on
            lines.append(f"Also possible: {other.engine.name} ({why}).")
    for out in rec.ruled_out:
        lines.append(f"Ruled out: {out.engine.name} does not run on {', '.join(out.missing)}.")
    return lines
