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
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from triage_bot.kb.regex import Found as Fired
from triage_bot.kb.schema import AREA_MODEL, Signature
from triage_bot.matching.areas import Areas, deciding
from triage_bot.matching.exceptions import (
    EnginePackages,
    area_of_object,
    missing_submodule,
    read_exception,
    version_skew,
)
from triage_bot.matching.index import CompiledKB, mask, tokens
from triage_bot.matching.rules import (
    Found,
    close_alternative,
    decide,
    engine_fit,
    family_admission,
    family_confidence,
    family_rank,
    specific_rank,
)
from triage_bot.matching.scored import Hit, How, Scored
from triage_bot.text.candidates import (
    find_candidates,
    has_failure_signal,
    is_change_request,
    looks_cut,
    looks_like_chat,
    reports_a_problem,
)
from triage_bot.text.extract import coerce_values, global_values, value_patterns
from triage_bot.text.normalize import Line, Normalized, normalize

PASSIVE_THRESHOLD = 0.80
MESSAGE_ENGINE_WEIGHT = 2.5  # a matched message of one engine's own signature, towards that engine
NEAR_FAILURE = 3000  # characters either side of the failure lines whose clues decide in a long paste
AREA_WEIGHT = 1.5  # the deciding frame's area: enough to recognise its family on its own
AREA_WEIGHT_CUT = 0.6  # the same when the paste stops inside the traceback: a guess
SKEW_WEIGHT = 2.5  # an exception whose shape is version skew: above an area (the area is where it surfaced)
LAST_RESORT = "fallback.unexplained_crash"
VERSION_SKEW = "install.dependency_version_mismatch"
WEIGHT_LOADING = "component.weight_loading"
# a crash in these functions of a model file is a checkpoint that does not fit the model's weights
WEIGHT_LOADING_FUNCTIONS = frozenset(
    {
        "load_weights",
        "_load_weights",
        "weight_loader",
        "load_state_dict",
        "load_model",
        "_load_model",
        "load_weight",
        "_load_w13",
        "_load_w2",
    }
)
WEAK_CONFIDENCE = 0.72  # a failure inferred from context: a good explicit answer, never passive
FUZZY_STRONG = 88.0  # with the engine agreeing, a fuzzy match this close may be answered unprompted
PREFILTER_CHOICES = 8  # per candidate line: the messages sharing its rarest words
FUZZY_LINES = 12  # the strongest candidate lines are compared (40 cost 3x on a 40k paste, same answers)
RESEMBLANCE_FLOOR = 60.0  # a fuzzy score at or below this is no resemblance (its confidence is 0)
FUZZY_FULL_LENGTH = 40.0  # lines shorter than this get proportionally less credit


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
    rule: str | None = None  # the ranking rule that chose the primary (triage_bot/matching/rules.py)
    alternative: Scored | None = None  # a runner-up within CLOSE_MARGIN of the primary

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
        if p.sig.needs_engine and (
            self.engine is None or (p.sig.engine_specific and self.engine != p.sig.engine)
        ):
            return False  # for engine-neutral signatures: some engine must show in the paste
        if looks_like_chat(self.normalized, p.line, p.span):
            return False  # someone talking about an error ("fixed it, the OOM was ...") is not a paste
        if is_change_request(self.normalized):
            return False  # "[Feature]: say why a schema is unsupported" asks for a change, not for help
        # a specific pattern is itself the failure signal; weaker evidence needs an error in sight
        return p.how in ("pattern", "wrapper") or self.failure_signal


_URL = re.compile(r"https?://[^\s)>\]]{1,500}")


def _clear_best(scores: dict[str, float]) -> str | None:
    """The engine whose clues weigh at least 1.0 and more than any other's, else None."""
    if not scores:
        return None
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    best, best_score = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    return best if best_score >= 1.0 and best_score > second else None


class Matcher:
    """Stateless after construction; safe to share between threads."""

    def __init__(self, compiled: CompiledKB):
        self.c = compiled
        self.areas = Areas(compiled.kb.engines.values())
        self.engine_packages = compiled.kb.engine_packages
        self.value_patterns = value_patterns(
            [cmd for info in compiled.kb.engines.values() for cmd in info.launch]
        )
        self.index = {sig.id: i for i, sig in enumerate(compiled.signatures)}
        # (family, clue pattern) of the evidence that describes the set-up, not a failure
        self.settings = {(e.owner, e.pattern) for e in compiled.entries if e.kind == "evidence" and e.setting}
        self.last_resort = compiled.kb.get(LAST_RESORT)

    # -- stages -----------------------------------------------------------------------------
    def _detect_engine(
        self, norm: Normalized, hits: dict[int, list[Hit]], near: tuple[int, int] | None = None
    ) -> tuple[str | None, dict[str, float]]:
        """The engine that runs, from the strongest evidence the paste holds: a failure message
        only one engine prints; else the engine whose frames raised; else, in a long paste, the
        engine clues around the failure; else the clues of the whole paste."""
        scores = self._engine_clues(norm.prefixed)
        # a failure message that only one engine prints is the strongest evidence that it runs,
        # whatever else the paste names (another engine's logs, a pip list, a question)
        stated = {
            self.c.signatures[i].engine
            for i, sig_hits in hits.items()
            if self._states_engine_failure(self.c.signatures[i], sig_hits)
        }
        for engine in stated:
            scores[engine] += MESSAGE_ENGINE_WEIGHT
        if len(stated) == 1:
            return next(iter(stated)), dict(scores)
        # then the engine whose frames the traceback runs through is the one that raised (an
        # application on top of it shows its own frames too, not another engine's); when two
        # engines print the message, it is the one of those two whose frames raised
        ran = self.areas.frame_engines(norm)
        if stated:
            ran &= stated
        if len(ran) == 1:
            return next(iter(ran)), dict(scores)
        if near is not None:
            # in a long paste, the clues around the failure: a 40,000-character log of one engine
            # around another engine's traceback names the wrong engine most often
            lo, hi = near
            around = self._engine_clues("\n".join(line.raw for line in norm.lines[lo : hi + 1]))
            for engine in stated:
                around[engine] += MESSAGE_ENGINE_WEIGHT
            best = _clear_best(around)
            if best is not None:
                return best, dict(scores)
        return _clear_best(scores), dict(scores)

    def _engine_clues(self, text: str) -> defaultdict[str, float]:
        """Each engine's detection clues in `text`, weighed; a link into an engine's source tree
        (github.com/vllm-project/...) is not that engine running."""
        scores: defaultdict[str, float] = defaultdict(float)
        for entry in self.c.scan_engines(_URL.sub(" ", text)):
            scores[entry.engine] += entry.weight
        return scores

    def _around_failure(self, norm: Normalized, hits: dict[int, list[Hit]]) -> tuple[int, int] | None:
        """(first line, last line) within NEAR_FAILURE characters of the lines where a failure's
        pattern matched, in a paste longer than two such spans; None when the paste is shorter or
        matches no failure's pattern (then the whole paste counts)."""
        if len(norm.text) <= 2 * NEAR_FAILURE:
            return None
        failing = [h.line.number for sig_hits in hits.values() for h in sig_hits]
        if not failing:
            return None
        first, last = min(failing), max(failing)
        lo, hi = first, last
        while lo > 0 and norm.offsets[first] - norm.offsets[lo - 1] <= NEAR_FAILURE:
            lo -= 1
        while hi + 1 < len(norm.lines) and norm.offsets[hi + 1] - norm.offsets[last] <= NEAR_FAILURE:
            hi += 1
        return lo, hi

    @staticmethod
    def _states_engine_failure(sig: Signature, sig_hits: list[Hit]) -> bool:
        """One engine's own failure message, in its own words: not a wrapper, not from context, and
        not a message that other software prints too (`needs_engine`: CUDA, PyTorch, MPI, Ray)."""
        return (
            sig.engine_specific
            and not sig.wrapper
            and not sig.is_family
            and not sig.needs_engine
            and any(not h.weak for h in sig_hits)
        )

    def _hits(self, norm: Normalized, fired: list[tuple[int, Fired]]) -> dict[int, list[Hit]]:
        hits: dict[int, list[Hit]] = defaultdict(list)
        for i, found in fired:
            entry = self.c.entries[i]
            if entry.kind != "pattern":
                continue
            start, end = found.span()
            values = {k: v for k, v in found.values.items() if v is not None}
            hits[entry.owner].append(
                Hit(entry.owner, norm.line_at(start), start, end - start, values, entry.weak)
            )
        return hits

    def _family_scores(self, fired: list[tuple[int, Fired]]) -> dict[int, tuple[float, list[str]]]:
        scores: dict[int, float] = defaultdict(float)
        clues: dict[int, list[str]] = defaultdict(list)
        for i, _ in fired:
            entry = self.c.entries[i]
            if entry.kind == "evidence":
                scores[entry.owner] += entry.weight
                clues[entry.owner].append(entry.pattern)
        return {k: (v, clues[k]) for k, v in scores.items()}

    def _fuzzy(self, norm: Normalized) -> dict[int, tuple[float, Line]]:
        """For each signature, its best resemblance to a candidate line, above the floor.

        Each line is compared only with the messages that share its rarest words, and rapidfuzz
        stops early on a pair that cannot reach the floor: a resemblance at or below it gives no
        confidence, so it is not one.
        """
        best: dict[int, tuple[float, Line]] = {}
        for cand in find_candidates(norm, FUZZY_LINES):
            query = mask(cand.line.text)
            chosen = self.c.prefilter(tokens(query), PREFILTER_CHOICES)
            if not chosen:
                continue
            penalty = 0.0 if not cand.wrapper else 15.0
            choices = [self.c.choices[i] for i in chosen]
            for _, raw, position in process.extract(
                query, choices, scorer=fuzz.partial_ratio, score_cutoff=RESEMBLANCE_FLOOR, limit=None
            ):
                # partial_ratio finds a short line inside any long message: scale by the shorter
                # length so that "failed" alone cannot look like a perfect match
                shorter = min(len(query), len(choices[position]))
                score = raw * min(1.0, shorter / FUZZY_FULL_LENGTH) - penalty
                owner = self.c.choice_owner[chosen[position]]
                if score > RESEMBLANCE_FLOOR and score > best.get(owner, (0.0, cand.line))[0]:
                    best[owner] = (score, cand.line)
        return best

    # -- confidence ---------------------------------------------------------------------------
    def _pattern_confidence(self, sig: Signature, line: Line, engine: str | None) -> float:
        fit = engine_fit(sig, engine)
        confidence = 0.93 + 0.04 * max(fit, 0)
        if fit < 0:
            confidence -= 0.30
        if line.level == "DEBUG":
            confidence -= 0.20
        if sig.wrapper:
            confidence = 0.84 if fit > 0 else (0.72 if fit == 0 else 0.5)
        return max(0.0, min(0.99, confidence))

    @staticmethod
    def _fuzzy_confidence(score: float, fit: int) -> float:
        """A near-copy of a known message: moderate alone, stronger when the engine agrees.

        Held-out pastes caught only by the fuzzy stage at >= 88 were all right in our measurements,
        and none of the negatives reached it; the engine's agreement is what lifts it to passive.
        """
        base = max(0.0, min(0.78, (score - RESEMBLANCE_FLOOR) / 40.0 * 0.78))
        if fit > 0 and score >= FUZZY_STRONG:
            return min(0.85, base + 0.25)
        return base

    # -- the whole thing ------------------------------------------------------------------------
    def match(self, text: str | bytes) -> MatchResult:
        norm = normalize(text)
        fired = self.c.scan(norm.text) if norm.text else []
        logged: list[tuple[int, Fired]] = []
        if norm.log_sources:
            # the files named in log prefixes are family evidence too (a frame the logger printed)
            sources = "\n".join(f"log source: {name}" for name in norm.log_sources)
            seen = {i for i, _ in fired}
            logged = [
                (i, m)
                for i, m in self.c.scan(sources)
                if i not in seen and self.c.entries[i].kind == "evidence"
            ]
        hits = self._hits(norm, fired)
        near = self._around_failure(norm, hits)
        engine, engine_scores = self._detect_engine(norm, hits, near)
        gvalues = global_values(norm.text, self.value_patterns)
        found = Found(
            engine,
            last_resort=self.last_resort,
            failure_signal=lambda: reports_a_problem(norm),
            values=gvalues,
        )
        if near is not None:
            # in a long paste, the clues around the failure say what failed; pages of other talk do not
            lo, hi = near
            start, end = norm.offsets[lo], norm.offsets[hi] + len(norm.lines[hi].text)
            fired = [(i, m) for i, m in fired if start <= m.span()[0] <= end]
        families = self._family_scores(fired + logged)
        family_values = self._area_and_exception(norm, engine, families)
        self._score_specific(norm, hits, families, gvalues, found)
        self._score_families(families, gvalues, family_values, found)
        if not found.specific:
            found.fuzzy = self._score_fuzzy(norm, engine, gvalues)

        decision = decide(found)
        primary = decision.primary if decision else None
        family_hint = None
        if primary is not None and primary.how == "wrapper":
            family_hint = found.area  # only an area the frames point to; a client 500 says nothing
        incomplete = decision.incomplete if decision else False
        if primary is None or primary.how in ("wrapper", "fuzzy"):
            incomplete = incomplete or looks_cut(norm)
        nearest = [s for s in found.fuzzy if primary is None or s.sig.id != primary.sig.id][:3]
        return MatchResult(
            normalized=norm,
            engine=engine,
            engine_scores=engine_scores,
            primary=primary,
            others=decision.others if decision else [],
            nearest=nearest,
            family_hint=family_hint,
            incomplete=incomplete,
            global_values=gvalues,
            rule=decision.rule if decision else None,
            alternative=close_alternative(found, decision) if decision else None,
        )

    # -- scoring: every candidate of each kind, ranked ------------------------------------------
    def _score_specific(
        self,
        norm: Normalized,
        hits: dict[int, list[Hit]],
        families: dict[int, tuple[float, list[str]]],
        gvalues: dict[str, object],
        found: Found,
    ) -> None:
        """Specific and wrapper matches, ranked by `specific_rank`; a family's own pattern adds to its evidence."""
        sigs = self.c.signatures
        specific: list[tuple[tuple[object, ...], Scored]] = []
        wrappers: list[tuple[tuple[object, ...], Scored]] = []
        for sig_index, sig_hits in hits.items():
            sig = sigs[sig_index]
            exact_hits = [h for h in sig_hits if not h.weak]
            exact = bool(exact_hits)
            ranked_hits = exact_hits or sig_hits
            first = min(ranked_hits, key=lambda h: h.start)
            if sig.is_family:
                # a family's own message counts as certain evidence; a context pattern as some
                score, clues = families.get(sig_index, (0.0, []))
                families[sig_index] = (score + (2.0 if exact else 1.0), [*clues, "pattern"])
                continue
            fit = engine_fit(sig, found.engine)
            if not exact and fit < 0:
                continue  # another engine's failure guessed from context: no evidence at all
            # the signature's own captures override values found elsewhere; the first capture wins
            own: dict[str, object] = {}
            for hit in sorted(sig_hits, key=lambda h: h.start):
                for key, value in coerce_values(hit.values).items():
                    own.setdefault(key, value)
            confidence = self._pattern_confidence(sig, first.line, found.engine)
            how: How = "wrapper" if sig.wrapper else "pattern"
            if not exact:
                how, confidence = "context", min(confidence, WEAK_CONFIDENCE)
            line_start = norm.offsets[first.line.number]
            span = (first.start - line_start, first.start - line_start + first.length)
            scored = Scored(sig, how, confidence, first.line, {**gvalues, **own}, span=span)
            rank = specific_rank(sig, fit, exact, max(h.length for h in ranked_hits), first.line.number)
            (wrappers if sig.wrapper else specific).append((rank, scored))
        found.specific = [s for _, s in sorted(specific, key=lambda kv: kv[0], reverse=True)]
        found.wrappers = [s for _, s in sorted(wrappers, key=lambda kv: kv[0], reverse=True)]

    def _area_and_exception(
        self, norm: Normalized, engine: str | None, families: dict[int, tuple[float, list[str]]]
    ) -> dict[int, dict[str, object]]:
        """Family evidence from where the crash happened (areas.py) and what its exception means
        (exceptions.py); returns the values each family's answer can quote (the file, the model,
        the two packages that disagree)."""
        values: dict[int, dict[str, object]] = {}

        def add(family: str, weight: float, clue: str, found_values: dict[str, object]) -> None:
            index = self.index.get(family)
            if index is None:
                return
            score, clues = families.get(index, (0.0, []))
            families[index] = (score + weight, [*clues, clue])
            values.setdefault(index, {}).update(found_values)

        decider = deciding(self.areas.locate(norm)) if norm.text else None
        raised = read_exception(norm) if norm.text else None
        named = area_of_object(raised) if raised is not None else None
        if named is not None:
            area, cls = named
            if area == AREA_MODEL:
                add(
                    LAST_RESORT,
                    AREA_WEIGHT,
                    f"exception: {cls} (a model class) lacks an attribute",
                    {"area_model": cls},
                )
            else:
                add(area, AREA_WEIGHT, f"exception: {cls} object lacks an attribute", {})
        elif decider is not None:
            area_values: dict[str, object] = {"area_path": decider.path}
            family = decider.family
            if family == AREA_MODEL:
                area_values["area_model"] = decider.model
                family = WEIGHT_LOADING if decider.function in WEIGHT_LOADING_FUNCTIONS else LAST_RESORT
            # a paste cut inside the frames hides the frame that raised: the last visible one only hints
            add(
                family,
                AREA_WEIGHT_CUT if looks_cut(norm) else AREA_WEIGHT,
                f"area: {decider.path}",
                area_values,
            )
        packages = EnginePackages.of(self.engine_packages, engine)
        skew = version_skew(norm, raised, packages) if raised is not None else None
        skew = skew or (missing_submodule(norm, packages) if "No module named" in norm.text else None)
        if skew is not None:
            add(VERSION_SKEW, SKEW_WEIGHT, f"version skew: {skew.package} vs {skew.other}", skew.values())
        return values

    def _score_families(
        self,
        families: dict[int, tuple[float, list[str]]],
        gvalues: dict[str, object],
        family_values: dict[int, dict[str, object]],
        found: Found,
    ) -> None:
        """Recognised families and guesses, ranked by `family_rank`, admitted by `family_admission`."""
        sigs = self.c.signatures
        scores = sorted((v[0] for k, v in families.items() if sigs[k].is_family), reverse=True)
        # an exact tie goes to the family listed first in the knowledge files, never to the order
        # in which patterns happened to fire
        ranked = sorted(
            families.items(), key=lambda kv: (*family_rank(sigs[kv[0]], kv[1][0]), -kv[0]), reverse=True
        )
        for sig_index, (score, clues) in ranked:
            sig = sigs[sig_index]
            if not sig.is_family:
                continue
            settings_only = all((sig_index, clue) in self.settings for clue in clues)
            admitted = family_admission(sig, score, found.engine, settings_only, found.failure_signal)
            if admitted is None:
                continue
            rival = (
                scores[1]
                if score == scores[0] and len(scores) > 1
                else (scores[0] if score != scores[0] else 0.0)
            )
            confidence = family_confidence(score, len(set(clues)), score - rival)
            scored = Scored(
                sig, "evidence", confidence, None, {**gvalues, **family_values.get(sig_index, {})}, clues
            )
            (found.families if admitted == "recognised" else found.guesses).append(scored)

    def _score_fuzzy(self, norm: Normalized, engine: str | None, gvalues: dict[str, object]) -> list[Scored]:
        """The five closest resemblances, best first; a resemblance to another engine's message is no evidence."""
        ranked: list[Scored] = []
        for sig_index, (score, line) in sorted(
            self._fuzzy(norm).items(), key=lambda kv: kv[1][0], reverse=True
        )[:5]:
            sig = self.c.signatures[sig_index]
            fit = engine_fit(sig, engine)
            if fit < 0:
                continue
            ranked.append(Scored(sig, "fuzzy", self._fuzzy_confidence(score, fit), line, dict(gvalues)))
        return ranked
