"""The ranking, as named rules: which of the failures found in a paste is its answer.

The matcher finds and scores every signature a paste shows: patterns, family evidence, fuzzy
resemblance. The rules below then decide, in order, which one answers; the first rule that
applies wins. Each rule is one small function with its own tests (tests/matching/test_rules.py).
Their docstrings are the only place the rules are written down: docs/knowledge-base.md shows
them as `triage-bot kb rules` prints them, and a test keeps the two the same.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from triage_bot.kb.schema import Signature
from triage_bot.matching.scored import Scored

FAMILY_THRESHOLD = 1.0
FAMILY_GUESS = 0.5  # below the threshold, still the best explicit guess (never passive)
EXPLICIT_FLOOR = 0.25
LAST_RESORT_PRIORITY = -50
LAST_RESORT_CONFIDENCE = 0.3  # "it crashed; here is how to find out why": the least sure answer


# -- orders and admission: how candidates of one kind compare ---------------------------------


def engine_fit(sig: Signature, engine: str | None) -> int:
    """1 when the signature fits the detected engine, 0 when unknown, -1 when it conflicts."""
    if not sig.engine_specific:
        return 1 if engine else 0
    if engine is None:
        return 0
    return 1 if sig.engine == engine else -1


def specific_rank(sig: Signature, fit: int, exact: bool, longest: int, line_index: int) -> tuple[object, ...]:
    """Among specific matches: one that fits the engine the paste shows (or a generic one) ranks
    above another engine's; a failure stated in its own words above one inferred from context;
    then higher `priority`, a match of the detected engine over an engine-neutral one, the longer
    matched text, and the earlier line (a chained traceback prints its root cause first)."""
    return (fit >= 0, exact, sig.priority, max(fit, 0), longest, -line_index)


def band(priority: int) -> int:
    """Families rank by band first: 2 for areas (priority >= 0), 1 for symptoms such as client
    errors (negative priority), 0 for the last resort (`fallback.unexplained_crash`, -50)."""
    if priority >= 0:
        return 2
    return 1 if priority > LAST_RESORT_PRIORITY else 0


def family_rank(sig: Signature, score: float) -> tuple[int, float]:
    """Families rank by band, then by the weight of their evidence."""
    return band(sig.priority), score


def family_admission(
    sig: Signature,
    score: float,
    engine: str | None,
    settings_only: bool = False,
    shows_failure: Callable[[], bool] = lambda: True,
) -> str | None:
    """A family is recognised at evidence >= 1.0 and an explicit best guess at 0.5-1.0 (never
    passive); the last resort ("the engine crashed") also needs an engine in sight, since an
    application's own traceback is not an engine crash. Evidence that only describes the set-up
    (multi-node flags, a Ray cluster: `setting` clues) is never more than a guess, whatever it
    weighs, and not even that when the paste shows no failure (a pull request about multi-node).
    Returns "recognised", "guess" or None."""
    if score < FAMILY_GUESS:
        return None
    if settings_only:
        return "guess" if shows_failure() else None
    if band(sig.priority) == 0 and engine is None:
        return None
    return "recognised" if score >= FAMILY_THRESHOLD else "guess"


def family_confidence(score: float, clues: int, margin: float) -> float:
    """A family's confidence grows with its evidence (0.45 + 0.2 per unit, at most 0.9) but is
    capped by how many distinct clues agree (one clue 0.62, two 0.74: measured on the tuning
    sets, one or two clues were right about 75-85% of the time, three or more about 96%) and by
    the margin over the next family (under 0.5: at most 0.76)."""
    confidence = min(0.9, 0.45 + 0.2 * score)
    if clues <= 1:
        confidence = min(confidence, 0.62)
    elif clues == 2:
        confidence = min(confidence, 0.74)
    if margin < 0.5:
        confidence = min(confidence, 0.76)
    return confidence


# -- the decision ------------------------------------------------------------------------------


@dataclass
class Found:
    """What the matcher found in one paste, each kind ranked best first, for the rules to choose from."""

    engine: str | None
    specific: list[Scored] = field(default_factory=list)  # specific non-wrapper matches
    wrappers: list[Scored] = field(default_factory=list)
    families: list[Scored] = field(default_factory=list)  # recognised (evidence >= 1.0)
    guesses: list[Scored] = field(default_factory=list)  # families with some evidence (0.5-1.0)
    fuzzy: list[Scored] = field(default_factory=list)  # resemblances, computed when no specific matched
    last_resort: Signature | None = None  # the knowledge base's last-resort family (its protocol)
    failure_signal: Callable[[], bool] = lambda: False  # does the paste show or report a failure? (lazy)
    values: dict[str, object] = field(default_factory=dict)  # values found anywhere in the paste

    @property
    def area(self) -> Scored | None:
        """The best recognised area family (priority >= 0): where the frames and clues point."""
        return next((f for f in self.families if f.sig.priority >= 0), None)

    def fits(self, scored: Scored) -> bool:
        """Stated in its own words, by a signature that fits the engine the paste shows."""
        return scored.how != "context" and engine_fit(scored.sig, self.engine) >= 0


@dataclass
class Decision:
    primary: Scored
    others: list[Scored]
    rule: str
    incomplete: bool = False  # the answer is only a wrapper: the cause is above the excerpt


def cause_stated_in_its_own_words(found: Found) -> Decision | None:
    """A specific failure stated in its own words, by a signature that fits the engine the paste
    shows, answers; it beats every wrapper, family and resemblance. Other specific failures in
    the paste are listed with it."""
    if found.specific and found.fits(found.specific[0]):
        return Decision(found.specific[0], found.specific[1:], "cause_stated_in_its_own_words")
    return None


def area_over_mismatched_specific(found: Found) -> Decision | None:
    """When the best specific match is another engine's failure, or only inferred from context
    (a start-up line, the user's prose), an area family the evidence recognises says more."""
    if found.specific and found.area is not None:
        return Decision(found.area, list(found.specific), "area_over_mismatched_specific")
    return None


def specific_even_if_mismatched(found: Found) -> Decision | None:
    """With no area family in sight, the best specific match answers even when it is another
    engine's or inferred from context (its confidence says so)."""
    if found.specific:
        return Decision(found.specific[0], found.specific[1:], "specific_even_if_mismatched")
    return None


def area_over_wrapper(found: Found) -> Decision | None:
    """A wrapper (`EngineDeadError`, `MPI_ABORT was invoked`, `Scheduler hit an exception`) only
    says that something below it died; an area family the frames point to names what, and the
    wrapper is listed as another failure in the paste."""
    if found.wrappers and found.area is not None:
        return Decision(found.area, list(found.wrappers), "area_over_wrapper")
    return None


def wrapper_asks_for_the_cause(found: Found) -> Decision | None:
    """A wrapper alone is named, with a request for the lines above it (the answer is marked
    incomplete). A symptom family (a client-side 500) does not beat it."""
    if found.wrappers:
        return Decision(found.wrappers[0], found.wrappers[1:], "wrapper_asks_for_the_cause", incomplete=True)
    return None


def area_guess_over_last_resort(found: Found) -> Decision | None:
    """When the only recognised family is the last resort ("the engine crashed"), an area family
    one clue short of recognition says more."""
    if found.families and band(found.families[0].sig.priority) == 0:
        guess = next((g for g in found.guesses if band(g.sig.priority) == 2), None)
        if guess is not None:
            return Decision(guess, [], "area_guess_over_last_resort")
    return None


def recognised_family(found: Found) -> Decision | None:
    """The best recognised family answers: areas before symptoms before the last resort, then by
    the weight of the evidence."""
    if found.families:
        return Decision(found.families[0], [], "recognised_family")
    return None


def close_resemblance(found: Found) -> Decision | None:
    """With nothing matched by pattern or evidence, a line that closely resembles a known
    failure's message (fuzzy score above the floor) answers, unless it resembles a wrapper."""
    best = found.fuzzy[0] if found.fuzzy else None
    if best is not None and best.confidence >= EXPLICIT_FLOOR and not best.sig.wrapper:
        return Decision(best, [], "close_resemblance")
    return None


def family_guess(found: Found) -> Decision | None:
    """Some evidence of an area, short of recognition, is the best guess for an explicit request."""
    if found.guesses:
        return Decision(found.guesses[0], [], "family_guess")
    return None


def any_failure_gets_the_protocol(found: Found) -> Decision | None:
    """An explicit request whose paste shows a failure (a frame, an error line, an exception) or
    says there is one ("[Bug]", "memory leak", "wrong results") is always answered: with nothing
    above, by the last resort's protocol (what to collect, how to report it for the engine in
    sight), at low confidence. "No known signature" is left for pastes with no failure in them."""
    if found.last_resort is not None and found.failure_signal():
        guess = Scored(found.last_resort, "evidence", LAST_RESORT_CONFIDENCE, None, dict(found.values))
        return Decision(guess, [], "any_failure_gets_the_protocol")
    return None


RULES: tuple[Callable[[Found], Decision | None], ...] = (
    cause_stated_in_its_own_words,
    area_over_mismatched_specific,
    specific_even_if_mismatched,
    area_over_wrapper,
    wrapper_asks_for_the_cause,
    area_guess_over_last_resort,
    recognised_family,
    close_resemblance,
    family_guess,
    any_failure_gets_the_protocol,
)
ORDERS: tuple[Callable[..., object], ...] = (
    engine_fit,
    specific_rank,
    band,
    family_rank,
    family_admission,
    family_confidence,
)


CLOSE_MARGIN = 0.10  # a runner-up this close to the answer is shown beside it


def close_alternative(found: Found, decision: Decision) -> Scored | None:
    """The best other candidate within CLOSE_MARGIN of the answer's confidence: a 44% answer with a
    40% runner-up should show both. Never a candidate with no real score, nor the last resort, nor
    one the answer already names as also in the paste."""
    taken = {decision.primary.sig.id, *(o.sig.id for o in decision.others)}
    pool = [*found.specific, *found.families, *found.guesses, *found.fuzzy]
    best = None
    for scored in pool:
        if scored.sig.id in taken or scored.confidence <= 0 or band(scored.sig.priority) == 0:
            continue
        if scored.confidence >= decision.primary.confidence - CLOSE_MARGIN and (
            best is None or scored.confidence > best.confidence
        ):
            best = scored
    return best


def decide(found: Found, rules: Sequence[Callable[[Found], Decision | None]] = RULES) -> Decision | None:
    """The first rule that applies decides; None when nothing in the paste is a known failure."""
    for rule in rules:
        decision = rule(found)
        if decision is not None:
            return decision
    return None


def markdown() -> str:
    """The rules as docs/knowledge-base.md shows them (generated: `triage-bot kb rules`)."""
    lines = ["How candidates of one kind compare:", ""]
    for func in ORDERS:
        lines.append(f"- `{func.__name__}`: {_oneline(func)}")
    lines += ["", "Which candidate answers (the first rule that applies):", ""]
    for n, rule in enumerate(RULES, 1):
        lines.append(f"{n}. `{rule.__name__}`: {_oneline(rule)}")
    return "\n".join(lines) + "\n"


def _oneline(func: Callable[..., object]) -> str:
    return " ".join((inspect.getdoc(func) or "").split())
