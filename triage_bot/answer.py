"""The answer the bot gives: a plain data object that every adapter (terminal, JSON, Slack) renders.

It holds no Slack blocks and no markup, only what an on-call engineer needs: what failed, how
sure the bot is, why it happens, the recovery computed from the paste, the FAQ answer and where to
read more. Rendering the recovery happens here, once, in the Jinja2 sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jinja2 import TemplateError

from triage_bot.kb.schema import Protocol, Signature
from triage_bot.matching.matcher import MatchResult
from triage_bot.matching.scored import Scored
from triage_bot.redaction import redact
from triage_bot.templating import render

MAX_LINE_CHARS = 500

INCOMPLETE_WRAPPER = (
    "This line only reports that another part of the engine failed; the cause is printed earlier "
    "in the log. Paste the first error of the log (the lines above this one) to get the root cause."
)
INNER_ERROR = "This line wraps the error that really failed, quoted after its colon: "
INFERRED = (
    "Inferred from the lines around the failure, not from its own error message: "
    "paste the error itself to confirm."
)
INCOMPLETE_CUT = (
    "The paste stops before the exception itself (it ends inside a traceback). "
    "Paste the last lines of the log, including the final exception line."
)


def confidence_word(confidence: float) -> str:
    """The word every surface shows beside the percentage, so they all read the same."""
    if confidence >= 0.9:
        return "high"
    if confidence >= 0.7:
        return "medium"
    return "low"


@dataclass(frozen=True, slots=True)
class Match:
    id: str
    engine: str
    title: str
    confidence: float
    line: str
    values: dict[str, Any]
    tier: str
    how: str
    severity: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "engine": self.engine,
            "title": self.title,
            "confidence": self.confidence,
            "line": self.line,
            "values": self.values,
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    title: str
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "confidence": self.confidence}


@dataclass(frozen=True, slots=True)
class Answer:
    match: Match | None
    passive: bool
    engine: str | None
    cause: str = ""
    recovery: str = ""
    commands: list[str] = field(default_factory=list)
    faq: str = ""
    docs: list[str] = field(default_factory=list)
    protocol: Protocol | None = None
    incomplete: bool = False
    note: str = ""
    family: Candidate | None = None
    others: list[Candidate] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    alternative: Candidate | None = None  # a runner-up close to the answer (within 10 points)
    truncated_input: bool = False
    rule: str | None = None  # the ranking rule that chose the match (triage_bot/matching/rules.py)

    @property
    def found(self) -> bool:
        return self.match is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "match": self.match.to_dict() if self.match else None,
            "candidates": [c.to_dict() for c in self.candidates],
            "answer": {
                "id": self.match.id if self.match else None,
                "title": self.match.title if self.match else "No known signature",
                "tier": self.match.tier if self.match else None,
                "severity": self.match.severity if self.match else None,
                "confidence": self.match.confidence if self.match else 0.0,
                "engine": self.engine,
                "passive": self.passive,
                "cause": self.cause,
                "recovery": self.recovery,
                "commands": self.commands,
                "faq": self.faq,
                "docs": self.docs,
                "protocol": self.protocol.model_dump() if self.protocol else None,
                "incomplete": self.incomplete,
                "note": self.note,
                "family": self.family.to_dict() if self.family else None,
                "others": [c.to_dict() for c in self.others],
                "alternative": self.alternative.to_dict() if self.alternative else None,
                "truncated_input": self.truncated_input,
                "rule": self.rule,
            },
        }


def _candidate(scored: Scored) -> Candidate:
    return Candidate(scored.sig.id, scored.sig.title, round(scored.confidence, 3))


def render_recovery(sig: Signature, values: dict[str, Any], engine: str | None) -> tuple[str, list[str]]:
    """Render the recovery for this engine; return the text and the `$ ` command lines."""
    try:
        text = render(sig.recovery_template(engine), values, engine)
    except (TemplateError, ArithmeticError, TypeError, ValueError) as exc:
        # a value of an unexpected kind must not cost the user the rest of the answer
        text = render(sig.recovery_template(engine), {}, engine) + f"\n(values could not be applied: {exc})"
    commands = [line[2:].strip() for line in text.splitlines() if line.startswith("$ ")]
    return text, commands


def own_docs(docs: list[str], engine: str | None, roots: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The links for the engine the paste shows: another engine's documentation is left out (a
    family signature lists every engine's pages); with no engine known, all of them stay."""
    if engine is None or engine not in roots:
        return list(docs)
    foreign = tuple(root for other, sites in roots.items() if other != engine for root in sites)
    return [url for url in docs if not url.startswith(foreign)] if foreign else list(docs)


def build_answer(result: MatchResult, doc_roots: Mapping[str, tuple[str, ...]] | None = None) -> Answer:
    """Turn a match result into the answer every surface shows (`doc_roots`: each engine's
    documentation sites, so an answer links only its own engine's pages)."""
    primary = result.primary
    candidates = [_candidate(s) for s in result.nearest]
    if primary is None:
        note = INCOMPLETE_CUT if result.incomplete else ""
        return Answer(
            match=None,
            passive=False,
            engine=result.engine,
            incomplete=result.incomplete,
            note=note,
            candidates=candidates,
            truncated_input=result.normalized.truncated,
        )
    sig = primary.sig
    engine = result.engine if sig.engine in ("generic", "any") else sig.engine
    values = {k: v for k, v in primary.values.items()}
    recovery, commands = render_recovery(sig, values, engine)
    # the matched line and the values are quoted back to the channel: a secret in them stays masked
    line = redact(primary.line.raw.strip()[:MAX_LINE_CHARS]) if primary.line else ""
    values = {key: redact(value) if isinstance(value, str) else value for key, value in values.items()}
    match = Match(
        id=sig.id,
        engine=engine or sig.engine,
        title=sig.title,
        confidence=round(primary.confidence, 3),
        line=line,
        values=values,
        tier=sig.tier,
        how=primary.how,
        severity=sig.severity,
    )
    note = ""
    # a wrapper that quotes the failure inline (TensorRT-LLM's "error in forwardAsync function: X")
    # needs nothing from above: its inner error is the lead, even when no signature knows it
    inner = values.get("inner_error") if primary.how == "wrapper" else None
    inline = inner.strip()[:MAX_LINE_CHARS] if isinstance(inner, str) else ""
    if inline:
        note = INNER_ERROR + inline
    elif primary.how == "wrapper":
        note = INCOMPLETE_WRAPPER
    elif primary.how == "context":
        note = INFERRED
    elif result.incomplete:
        note = INCOMPLETE_CUT
    cause = sig.cause.strip()
    if primary.how == "evidence" and values.get("area_path"):
        # the area map decided: say which file, so the reader can check the call
        cause += f" The deepest engine frame outside its plumbing is in `{values['area_path']}`."
    return Answer(
        match=match,
        passive=result.passive,
        engine=result.engine,
        cause=cause,
        recovery=recovery,
        commands=commands,
        faq=sig.faq.strip(),
        docs=own_docs(sig.docs, engine, doc_roots or {}),
        protocol=sig.protocol,
        incomplete=(result.incomplete or primary.how == "wrapper") and not inline,
        note=note,
        family=_candidate(result.family_hint) if result.family_hint else None,
        others=[_candidate(s) for s in result.others],
        candidates=candidates,
        alternative=_candidate(result.alternative) if result.alternative else None,
        truncated_input=result.normalized.truncated,
        rule=result.rule,
    )
