"""Compile a knowledge base once into the structures a paste is scored against.

- One RE2 `Set` holds every signature pattern, family clue and engine clue, so a paste is
  scanned once whatever the number of signatures; only the patterns that fired are run again to
  find where they matched and what values they captured.
- A token index over the signatures' messages and examples prefilters the fuzzy stage: a paste is
  compared only with the examples that share rare words with it, so the fuzzy cost grows with the
  number of *relevant* signatures, not with the size of the knowledge base.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from triage_bot.kb.loader import KnowledgeBase
from triage_bot.kb.regex import compile_pattern, new_search_set
from triage_bot.kb.schema import Signature

EntryKind = Literal["pattern", "evidence", "engine"]
# RE2 builds one DFA per set lazily; when a set's DFA outgrows its memory budget RE2 starts over
# again and again and a pass costs milliseconds instead of microseconds. Measured on real pastes:
# one set of 760 patterns thrashed at 64 MiB (4.7 ms a paste), sets of 200 did not (0.06 ms). Patterns
# with wide bounded windows (`[^\n]{0,80}`, `(?s:.){0,1000}`) multiply DFA states, so they go in
# small sets of their own.
SET_CHUNK = 200
HEAVY_SET_CHUNK = 12
SET_MAX_MEM = 32 << 20
_WINDOW = re.compile(r"\{\d*,(\d+)\}")
MAX_CHOICE_CHARS = 240

_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~+-]*/){2,}")
_NUM = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"[a-z_][a-z_]{3,}")
_STOP = frozenset(
    ["this", "that", "with", "from", "have", "when", "were", "will", "your", "than", "then", "there", "their", "which", "while", "into", "only", "also", "more", "most", "other", "some", "such", "these", "those", "what", "been", "being", "does", "done", "please", "check", "error", "errors", "line", "file", "none", "true", "false", "self", "return", "value", "values", "using", "used"]
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
    regex: Any
    weak: bool = False  # a context-only signature pattern


@dataclass
class CompiledKB:
    kb: KnowledgeBase
    signatures: list[Signature]
    entries: list[Entry]
    sets: list[tuple[list[int], Any]]  # (entry indexes, set) over signature patterns and clues
    engine_entries: list[Entry]
    engine_set: Any  # engine clues, run over the paste with its log prefixes kept
    choices: list[str]  # masked messages and examples
    choice_owner: list[int]
    postings: dict[str, list[int]] = field(default_factory=dict)
    idf: dict[str, float] = field(default_factory=dict)

    def scan(self, text: str) -> list[int]:
        """Indexes of every entry whose regex occurs somewhere in `text` (one pass per set)."""
        data = text.encode("utf-8")  # once, not once per set
        found: list[int] = []
        for members, pattern_set in self.sets:
            found.extend(members[i] for i in (pattern_set.Match(data) or ()))
        return found

    def scan_engines(self, prefixed: str) -> list[Entry]:
        """Engine clues found in the paste, log prefixes included (they name the engine's processes)."""
        if self.engine_set is None:
            return []
        return [self.engine_entries[i] for i in (self.engine_set.Match(prefixed) or ())]

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


def is_heavy(pattern: str) -> bool:
    """A pattern whose DFA grows fast: wide bounded windows or unbounded wildcards."""
    return any(int(m) >= 20 for m in _WINDOW.findall(pattern)) or ".*" in pattern or ".+" in pattern


def _build_sets(entries: list[Entry]) -> list[tuple[list[int], Any]]:
    light = [i for i, e in enumerate(entries) if not is_heavy(e.regex.pattern)]
    heavy = [i for i, e in enumerate(entries) if is_heavy(e.regex.pattern)]
    sets: list[tuple[list[int], Any]] = []
    for group, size in ((light, SET_CHUNK), (heavy, HEAVY_SET_CHUNK)):
        for start in range(0, len(group), size):
            members = group[start : start + size]
            pattern_set = new_search_set(SET_MAX_MEM)
            for i in members:
                pattern_set.Add(entries[i].regex.pattern)
            pattern_set.Compile()
            sets.append((members, pattern_set))
    return sets


def compile_kb(kb: KnowledgeBase) -> CompiledKB:
    engine_entries = [
        Entry("engine", -1, engine_id, clue.weight, compile_pattern(clue.pattern))
        for engine_id, info in kb.engines.items()
        for clue in info.detect
    ]
    engine_set = None
    if engine_entries:
        engine_set = new_search_set(SET_MAX_MEM)
        for entry in engine_entries:
            engine_set.Add(entry.regex.pattern)
        engine_set.Compile()
    entries: list[Entry] = []
    for index, sig in enumerate(kb.signatures):
        for pattern, weak in sig.pattern_specs:
            entries.append(Entry("pattern", index, "", 1.0, compile_pattern(pattern), weak))
        for clue in sig.evidence:
            entries.append(Entry("evidence", index, "", clue.weight, compile_pattern(clue.pattern)))

    sets = _build_sets(entries)

    choices: list[str] = []
    owner: list[int] = []
    for index, sig in enumerate(kb.signatures):
        if sig.is_family:
            continue  # families are recognised from evidence; their examples would only attract noise
        seen: set[str] = set()
        for text in [*sig.messages, *sig.examples]:
            masked = mask(text)
            if masked and masked not in seen:
                seen.add(masked)
                choices.append(masked)
                owner.append(index)

    compiled = CompiledKB(kb, list(kb.signatures), entries, sets, engine_entries, engine_set, choices, owner)
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
