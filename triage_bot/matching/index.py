"""Compile a knowledge base once into the structures a paste is scored against.

- A `PatternScan` (triage_bot/kb/regex.py) finds which signature patterns and family clues occur
  in a paste, and where each first matches with what it captured, running only the patterns whose
  literal strings are there. Engine clues have a scan of their own, over the paste with its log
  prefixes kept.
- A token index over the signatures' messages and examples prefilters the fuzzy stage: a paste is
  compared only with the examples that share rare words with it, so the fuzzy cost grows with the
  number of *relevant* signatures, not with the size of the knowledge base.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

import re2

from triage_bot.kb.loader import KnowledgeBase
from triage_bot.kb.regex import Found, PatternScan, compile_pattern
from triage_bot.kb.schema import Signature

EntryKind = Literal["pattern", "evidence", "engine"]
MAX_CHOICE_CHARS = 240

_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~+-]*/){2,}")
_NUM = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"[a-z_][a-z_]{3,}")
_STOP = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "have",
        "when",
        "were",
        "will",
        "your",
        "than",
        "then",
        "there",
        "their",
        "which",
        "while",
        "into",
        "only",
        "also",
        "more",
        "most",
        "other",
        "some",
        "such",
        "these",
        "those",
        "what",
        "been",
        "being",
        "does",
        "done",
        "please",
        "check",
        "error",
        "errors",
        "line",
        "file",
        "none",
        "true",
        "false",
        "self",
        "return",
        "value",
        "values",
        "using",
        "used",
    ]
)


def mask(text: str) -> str:
    """Lower-case and mask volatile tokens (addresses, paths, numbers) for fuzzy comparison."""
    text = _HEX.sub("0x", text)
    text = _PATH.sub("/", text)
    text = _NUM.sub("0", text)
    return _SPACE.sub(" ", text).strip().lower()[:MAX_CHOICE_CHARS]


def tokens(masked: str) -> set[str]:
    return {t for t in _TOKEN.findall(masked) if t not in _STOP}


@dataclass(frozen=True, slots=True)
class Entry:
    kind: EntryKind
    owner: int  # signature index, or -1 for engine clues
    engine: str  # engine id for engine clues
    weight: float
    pattern: str
    weak: bool = False  # a context-only signature pattern
    setting: bool = False  # family evidence that describes the set-up, not a failure

    @property
    def regex(self) -> re2._Regexp:
        return compile_pattern(self.pattern)  # compiled on first use, once per process


@dataclass
class CompiledKB:
    kb: KnowledgeBase
    signatures: list[Signature]
    entries: list[Entry]
    patterns: PatternScan  # over `entries`: signature patterns and family clues
    engine_entries: list[Entry]
    engine_patterns: PatternScan  # engine clues, run over the paste with its log prefixes kept
    choices: list[str]  # masked messages and examples
    choice_owner: list[int]
    postings: dict[str, list[int]] = field(default_factory=dict)
    idf: dict[str, float] = field(default_factory=dict)

    def scan(self, text: str) -> list[tuple[int, Found]]:
        """(index, first match) of every entry whose regex occurs somewhere in `text`."""
        return self.patterns.scan(text)

    def scan_engines(self, prefixed: str) -> list[Entry]:
        """Engine clues found in the paste, log prefixes included (they name the engine's processes)."""
        return [self.engine_entries[i] for i, _ in self.engine_patterns.scan(prefixed)]

    def prefilter(self, line_tokens: set[str], limit: int) -> list[int]:
        """The choices sharing the rarest words with the candidate lines, best first.

        Words are summed in sorted order and ties go to the earlier choice: a set's order changes
        with each process's hash seed, and the same paste must get the same answer in every process.
        """
        scores: dict[int, float] = defaultdict(float)
        for token in sorted(line_tokens):
            weight = self.idf.get(token)
            if weight is None:
                continue
            for choice in self.postings[token]:
                scores[choice] += weight
        if not scores:
            return []
        return sorted(scores, key=lambda choice: (-scores[choice], choice))[:limit]


def compile_kb(kb: KnowledgeBase) -> CompiledKB:
    engine_entries = [
        Entry("engine", -1, engine_id, clue.weight, clue.pattern)
        for engine_id, info in kb.engines.items()
        for clue in info.detect
    ]
    entries: list[Entry] = []
    for index, sig in enumerate(kb.signatures):
        entries.extend(Entry("pattern", index, "", 1.0, pattern, weak) for pattern, weak in sig.pattern_specs)
        entries.extend(
            Entry("evidence", index, "", clue.weight, clue.pattern, setting=clue.setting)
            for clue in sig.evidence
        )
    patterns = PatternScan([e.pattern for e in entries], kb.needs_of)
    engine_patterns = PatternScan([e.pattern for e in engine_entries], kb.needs_of)

    choices: list[str] = []
    owner: list[int] = []
    for index, sig in enumerate(kb.signatures):
        if sig.is_family:
            continue  # families are recognised from evidence; their examples would only attract noise
        seen: set[str] = set()
        for text in [*sig.messages, *sig.resembling_texts]:
            masked = mask(text)
            if masked and masked not in seen:
                seen.add(masked)
                choices.append(masked)
                owner.append(index)

    compiled = CompiledKB(
        kb, list(kb.signatures), entries, patterns, engine_entries, engine_patterns, choices, owner
    )
    postings: dict[str, list[int]] = defaultdict(list)
    for choice_index, text in enumerate(choices):
        for token in tokens(text):
            postings[token].append(choice_index)
    total = max(1, len(kb.signatures))
    for token, plist in postings.items():
        owners = len({owner[i] for i in plist})
        # words shared by many signatures say little about which one this is
        if owners <= max(3, total // 10):
            compiled.postings[token] = plist
            compiled.idf[token] = math.log(1 + total / owners)
    return compiled
