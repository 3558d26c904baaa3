"""The core's public surface: load the knowledge base once, triage any text into an Answer.

Adapters (CLI, console, Slack) call only `triage()` or a `Triager`; none of them knows how
matching works, and nothing here knows about Slack.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from triage_bot import metrics
from triage_bot.answer import Answer, build_answer
from triage_bot.kb.loader import KnowledgeBase, load
from triage_bot.matching.index import compile_kb
from triage_bot.matching.matcher import Matcher, MatchResult


class Triager:
    """A loaded, compiled knowledge base ready to answer pastes (thread-safe)."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.matcher = Matcher(compile_kb(kb))

    @classmethod
    def from_directory(cls, directory: Path | None = None) -> Triager:
        return cls(load(directory))

    def match(self, text: str | bytes) -> MatchResult:
        started = time.perf_counter()
        try:
            return self.matcher.match(text)
        finally:
            metrics.MATCH_SECONDS.observe(time.perf_counter() - started)

    def triage(self, text: str | bytes) -> Answer:
        answer = build_answer(self.match(text))
        m = answer.match
        metrics.ANSWERS.labels(m.tier if m else "none", metrics.confidence_band(m.confidence if m else None)).inc()
        return answer


_default: Triager | None = None
_lock = threading.Lock()


def default_triager() -> Triager:
    """The triager for the bundled knowledge base, built on first use."""
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = Triager.from_directory()
    return _default


def triage(text: str | bytes) -> Answer:
    """Answer one paste with the bundled knowledge base (explicit mode: always the best match)."""
    return default_triager().triage(text)
