"""Score a paste against every signature and pick the failure it shows.

The order of evidence, strongest first:
1. a specific signature's pattern on a line that states a cause (not a wrapper);
2. a family recognised from the evidence in the paste (frames, flags, libraries, signals);
3. a wrapper alone ("EngineDeadError", "MPI_ABORT was invoked"): named, with a request for the
   lines above it;
4. a fuzzy resemblance between a candidate line and a signature's messages, for wordings no
   pattern knows yet.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from rapidfuzz import fuzz, process

from bot.kb.schema import ENGINES, Signature
from bot.matching.index import CompiledKB, mask, tokens
from bot.text.candidates import find_candidates, has_failure_signal, looks_cut, looks_like_chat
from bot.text.extract import coerce_values, global_values
from bot.text.normalize import Line, Normalized, normalize

How = Literal["pattern", "context", "wrapper", "evidence", "fuzzy"]

PASSIVE_THRESHOLD = 0.80
EXPLICIT_FLOOR = 0.25
FAMILY_THRESHOLD = 1.0
FAMILY_GUESS = 0.5  # below the threshold, still the best explicit guess (never passive)
WEAK_CONFIDENCE = 0.72  # a failure inferred from context: a good explicit answer, never passive
FUZZY_STRONG = 88.0  # with the engine agreeing, a fuzzy match this close may be answered unprompted
PREFILTER_CHOICES = 48
FUZZY_FULL_LENGTH = 40.0  # lines shorter than this get proportionally less credit


@dataclass(frozen=True, slots=True)
class Hit:
    """One signature pattern found in the paste."""

    sig_index: int
    line: Line
    start: int
    length: int
    values: dict[str, str]
    weak: bool = False


@dataclass(slots=True)
class Scored:
    """A signature with everything the paste said in its favour."""

    sig: Signature
    how: How
    confidence: float
    line: Line | None
    values: dict[str, object] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    span: tuple[int, int] | None = None  # where the pattern matched within `line.text`


@dataclass(slots=True)
class MatchResult:
    normalized: Normalized
    engine: str | None
    engine_scores: dict[str, float]
    primary: Scored | None
    others: list[Scored]  # other failures in the same paste
    nearest: list[Scored]  # runners-up, for "no known signature" and for context
    family_hint: Scored | None  # the family when the primary is only a wrapper
    incomplete: bool  # the paste holds only a wrapper or stops before its cause
    global_values: dict[str, object]

    @property
    def failure_signal(self) -> bool:
        """Does anything in the paste look like a failure? (computed only when a decision needs it)"""
        return has_failure_signal(self.normalized)

    @property
    def passive(self) -> bool:
        """Would the bot answer this message unprompted in a channel?"""
        p = self.primary
        if p is None or not p.sig.passive or p.confidence < PASSIVE_THRESHOLD:
            return False
        if p.sig.needs_engine and (self.engine is None or (p.sig.engine in ENGINES and self.engine != p.sig.engine)):
            return False  # for engine-neutral signatures: some engine must show in the paste
        if looks_like_chat(self.normalized, p.line, p.span):
            return False  # someone talking about an error ("fixed it, the OOM was ...") is not a paste
        # a specific pattern is itself the failure signal; weaker evidence needs an error in sight
        return p.how in ("pattern", "wrapper") or self.failure_signal


LAST_RESORT_PRIORITY = -50
_URL = re.compile(r"https?://[^\s)>\]]{1,500}")


def _band(priority: int) -> int:
    """2 for area families, 1 for weak symptoms (negative priority), 0 for the last resort."""
    if priority >= 0:
        return 2
    return 1 if priority > LAST_RESORT_PRIORITY else 0


class Matcher:
    """Stateless after construction; safe to share between threads."""

    def __init__(self, compiled: CompiledKB):
        self.c = compiled

    # -- stages -----------------------------------------------------------------------------
    def _detect_engine(self, norm: Normalized) -> tuple[str | None, dict[str, float]]:
        scores: dict[str, float] = defaultdict(float)
        # a link into an engine's source tree (github.com/vllm-project/...) is not that engine running
        for entry in self.c.scan_engines(_URL.sub(" ", norm.prefixed)):
            scores[entry.engine] += entry.weight
        if not scores:
            return None, {}
        ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
        best, best_score = ranked[0]
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        if best_score >= 1.0 and best_score > second:
            return best, dict(scores)
        return None, dict(scores)

    def _hits(self, norm: Normalized, fired: list[int]) -> dict[int, list[Hit]]:
        hits: dict[int, list[Hit]] = defaultdict(list)
        for i in fired:
            entry = self.c.entries[i]
            if entry.kind != "pattern":
                continue
            found = entry.regex.search(norm.text)
            if found is None:
                continue
            start, end = found.span()
            values = {k: v for k, v in found.groupdict().items() if v is not None}
            hits[entry.owner].append(
                Hit(entry.owner, norm.line_at(start), start, end - start, values, entry.weak)
            )
        return hits

    def _family_scores(self, norm: Normalized, fired: list[int]) -> dict[int, tuple[float, list[str]]]:
        scores: dict[int, float] = defaultdict(float)
        clues: dict[int, list[str]] = defaultdict(list)
        for i in fired:
            entry = self.c.entries[i]
            if entry.kind == "evidence":
                scores[entry.owner] += entry.weight
                clues[entry.owner].append(entry.regex.pattern)
        return {k: (v, clues[k]) for k, v in scores.items()}

    def _fuzzy(self, norm: Normalized) -> dict[int, tuple[float, Line]]:
        candidates = find_candidates(norm)
        if not candidates:
            return {}
        queries = [mask(c.line.text) for c in candidates]
        line_tokens: set[str] = set()
        for q in queries:
            line_tokens |= tokens(q)
        chosen = self.c.prefilter(line_tokens, PREFILTER_CHOICES)
        if not chosen:
            return {}
        choices = [self.c.choices[i] for i in chosen]
        matrix = process.cdist(queries, choices, scorer=fuzz.partial_ratio, workers=1)
        # partial_ratio finds a short line inside any long message: scale by the shorter length so
        # that "failed" alone cannot look like a perfect match
        shorter = np.minimum.outer(
            np.fromiter((len(q) for q in queries), dtype=np.float32, count=len(queries)),
            np.fromiter((len(c) for c in choices), dtype=np.float32, count=len(choices)),
        )
        matrix = matrix * np.minimum(1.0, shorter / FUZZY_FULL_LENGTH)
        best: dict[int, tuple[float, Line]] = {}
        for qi, cand in enumerate(candidates):
            weight_penalty = 0.0 if not cand.wrapper else 15.0
            row = matrix[qi]
            for ci, choice_index in enumerate(chosen):
                score = float(row[ci]) - weight_penalty
                owner = self.c.choice_owner[choice_index]
                if score > best.get(owner, (0.0, cand.line))[0]:
                    best[owner] = (score, cand.line)
        return best

    # -- confidence ---------------------------------------------------------------------------
    @staticmethod
    def _engine_fit(sig: Signature, engine: str | None) -> int:
        """1 when the signature fits the detected engine, 0 when unknown, -1 when it conflicts."""
        if sig.engine not in ENGINES:
            return 1 if engine else 0
        if engine is None:
            return 0
        return 1 if sig.engine == engine else -1

    def _pattern_confidence(self, sig: Signature, line: Line, engine: str | None) -> float:
        fit = self._engine_fit(sig, engine)
        confidence = 0.93 + 0.04 * max(fit, 0)
        if fit < 0:
            confidence -= 0.30
        if line.level == "DEBUG":
            confidence -= 0.20
        if sig.wrapper:
            confidence = 0.84 if fit > 0 else (0.72 if fit == 0 else 0.5)
        return max(0.0, min(0.99, confidence))

    @staticmethod
    def _family_confidence(score: float) -> float:
        return min(0.9, 0.45 + 0.2 * score)

    @staticmethod
    def _fuzzy_confidence(score: float, fit: int) -> float:
        """A near-copy of a known message: moderate alone, stronger when the engine agrees.

        Held-out pastes caught only by the fuzzy stage at >= 88 were all right in our measurements,
        and none of the negatives reached it; the engine's agreement is what lifts it to passive.
        """
        base = max(0.0, min(0.78, (score - 60.0) / 40.0 * 0.78))
        if fit > 0 and score >= FUZZY_STRONG:
            return min(0.85, base + 0.25)
        return base

    # -- the whole thing ------------------------------------------------------------------------
    def match(self, text: str | bytes) -> MatchResult:
        norm = normalize(text)
        fired = self.c.scan(norm.text) if norm.text else []
        if norm.log_sources:
            # the files named in log prefixes are family evidence too (a frame the logger printed)
            sources = "\n".join(f"log source: {name}" for name in norm.log_sources)
            seen = set(fired)
            fired += [i for i in self.c.scan(sources) if i not in seen and self.c.entries[i].kind == "evidence"]
        engine, engine_scores = self._detect_engine(norm)
        hits = self._hits(norm, fired)
        families = self._family_scores(norm, fired)
        gvalues = global_values(norm.text)
        sigs = self.c.signatures

        specific: list[tuple[tuple, Scored]] = []
        wrappers: list[tuple[tuple, Scored]] = []
        for sig_index, sig_hits in hits.items():
            sig = sigs[sig_index]
            exact_hits = [h for h in sig_hits if not h.weak]
            exact = bool(exact_hits)
            ranked_hits = exact_hits or sig_hits
            first = min(ranked_hits, key=lambda h: h.start)
            # the signature's own captures override values found elsewhere; the first capture wins
            own: dict[str, object] = {}
            for hit in sorted(sig_hits, key=lambda h: h.start):
                for key, value in coerce_values(hit.values).items():
                    own.setdefault(key, value)
            values: dict[str, object] = {**gvalues, **own}
            longest = max(h.length for h in ranked_hits)
            if sig.is_family:
                # a family's own message counts as certain evidence; a context pattern as some
                score, clues = families.get(sig_index, (0.0, []))
                families[sig_index] = (score + (2.0 if exact else 1.0), [*clues, "pattern"])
                continue
            confidence = self._pattern_confidence(sig, first.line, engine)
            how: How = "wrapper" if sig.wrapper else "pattern"
            if not exact:
                if self._engine_fit(sig, engine) < 0:
                    continue  # another engine's failure guessed from context: no evidence at all
                how, confidence = "context", min(confidence, WEAK_CONFIDENCE)
            line_start = norm.offsets[first.line.index]
            span = (first.start - line_start, first.start - line_start + first.length)
            scored = Scored(sig, how, confidence, first.line, values, span=span)
            fit = self._engine_fit(sig, engine)
            # a signature of another engine than the paste shows ranks below every one that fits,
            # and a failure inferred from context ranks below every failure stated in its own words
            key = (fit >= 0, exact, sig.priority, max(fit, 0), longest, -first.line.index)
            (wrappers if sig.wrapper else specific).append((key, scored))

        specific.sort(key=lambda kv: kv[0], reverse=True)
        wrappers.sort(key=lambda kv: kv[0], reverse=True)

        # families rank by priority band (area families, then weak symptoms such as client errors,
        # then the fallback as the last resort), and within a band by evidence
        family_ranked: list[Scored] = []
        ranked_families = sorted(
            families.items(), key=lambda kv: (_band(sigs[kv[0]].priority), kv[1][0]), reverse=True
        )
        family_guesses: list[Scored] = []
        for sig_index, (score, clues) in ranked_families:
            sig = sigs[sig_index]
            if not sig.is_family or score < FAMILY_GUESS:
                continue
            if _band(sig.priority) == 0 and engine is None:
                continue  # "the engine crashed" needs an engine in sight: an app's own traceback is not ours
            scored = Scored(sig, "evidence", self._family_confidence(score), None, dict(gvalues), clues)
            (family_ranked if score >= FAMILY_THRESHOLD else family_guesses).append(scored)
        # an area the frames point to says more than a wrapper; a generic crash or client error does not
        strong_family = next((f for f in family_ranked if f.sig.priority >= 0), None)

        primary: Scored | None = None
        others: list[Scored] = []
        family_hint: Scored | None = None
        incomplete = False
        fuzzy_ranked: list[Scored] = []

        # the best specific is another engine's, or only inferred from context: an area the
        # evidence points to says more
        mismatched = bool(specific) and not (specific[0][0][0] and specific[0][0][1])
        if specific and not (mismatched and strong_family is not None):
            primary = specific[0][1]
            others = [s for _, s in specific[1:]]
        elif specific:
            primary = strong_family
            others = [s for _, s in specific]
        else:
            fuzzy = self._fuzzy(norm)
            for sig_index, (score, line) in sorted(fuzzy.items(), key=lambda kv: kv[1][0], reverse=True)[:5]:
                sig = sigs[sig_index]
                if self._engine_fit(sig, engine) < 0:
                    continue  # a resemblance to another engine's message is not evidence
                fuzzy_ranked.append(
                    Scored(sig, "fuzzy", self._fuzzy_confidence(score, self._engine_fit(sig, engine)), line,
                           dict(gvalues))
                )
            if wrappers and strong_family is not None:
                primary = strong_family
                others = [s for _, s in wrappers]
            elif wrappers:
                # a wrapper names what died; a weak family (from frames) says where to look
                primary = wrappers[0][1]
                others = [s for _, s in wrappers[1:]]
                incomplete = True
            elif family_ranked:
                primary = family_ranked[0]
                area_guess = next((f for f in family_guesses if _band(f.sig.priority) == 2), None)
                if _band(primary.sig.priority) == 0 and area_guess is not None:
                    primary = area_guess  # an area one clue short says more than "it crashed"
            elif fuzzy_ranked and fuzzy_ranked[0].confidence >= EXPLICIT_FLOOR and not fuzzy_ranked[0].sig.wrapper:
                primary = fuzzy_ranked[0]
            elif family_guesses:
                # some evidence of an area, short of recognition: the best guess for an explicit request
                primary = family_guesses[0]

        if primary is not None and primary.how == "wrapper" and strong_family is not None:
            family_hint = strong_family  # only an area the frames point to; a client 500 says nothing
        if primary is None or primary.how in ("wrapper", "fuzzy"):
            incomplete = incomplete or looks_cut(norm)

        nearest = [s for s in fuzzy_ranked if primary is None or s.sig.id != primary.sig.id][:3]
        return MatchResult(
            normalized=norm,
            engine=engine,
            engine_scores=engine_scores,
            primary=primary,
            others=others,
            nearest=nearest,
            family_hint=family_hint,
            incomplete=incomplete,
            global_values=gvalues,
        )
