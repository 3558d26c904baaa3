"""The core's public surface: load the knowledge base once, triage any text into an Answer.

Adapters (CLI, console, Slack) call only `triage()` or a `Triager`; none of them knows how
matching works, and nothing here knows about Slack.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path

from triage_bot.answer import Answer, build_answer
from triage_bot.kb.loader import KnowledgeBase, load
from triage_bot.matching.index import compile_kb
from triage_bot.matching.matcher import Matcher, MatchResult

# What watches the core: the serving process's metrics (triage_bot/metrics.py) register here when
# imported, so a one-line CLI triage does not import a metrics library (56 ms of its start).
MatchWatcher = Callable[[float], None]  # seconds one match took
AnswerWatcher = Callable[[Answer], None]
match_watchers: list[MatchWatcher] = []
answer_watchers: list[AnswerWatcher] = []


class Triager:
    """A loaded, compiled knowledge base ready to answer pastes (thread-safe)."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.matcher = Matcher(compile_kb(kb))

    def warm(self, stop: threading.Event | None = None) -> int:
        """Compile every pattern and match every signature's own examples once, so the first real
        pastes a long-running process sees do not pay for compiling (patterns compile on first use,
        which suits a one-shot CLI call) or for RE2's first DFA states. Returns the pastes matched;
        `stop` ends it early (a process shutting down)."""
        for entry in (*self.matcher.c.entries, *self.matcher.c.engine_entries):
            if stop is not None and stop.is_set():
                return 0
            entry.regex  # noqa: B018 - compiled and cached on first access
        examples = [text for sig in self.kb.signatures for text in (*sig.example_texts, *sig.messages)]
        for done, text in enumerate(examples):
            if stop is not None and stop.is_set():
                return done
            self.matcher.match(text)
        return len(examples)

    @classmethod
    def from_directory(cls, directory: Path | None = None) -> Triager:
        return cls(load(directory))

    @functools.cached_property
    def doc_roots(self) -> dict[str, tuple[str, ...]]:
        return self.kb.doc_roots

    def match(self, text: str | bytes) -> MatchResult:
        started = time.perf_counter()
        try:
            return self.matcher.match(text)
        finally:
            elapsed = time.perf_counter() - started
            for watcher in match_watchers:
                watcher(elapsed)

    def triage(self, text: str | bytes) -> Answer:
        answer = build_answer(self.match(text), self.doc_roots)
        for watcher in answer_watchers:
            watcher(answer)
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
