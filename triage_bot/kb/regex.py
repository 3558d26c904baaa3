"""RE2 compilation shared by validation and matching: linear-time, and quiet on bad patterns."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from functools import cached_property, lru_cache, partial
from typing import Any, NamedTuple

import ahocorasick
import re2

from triage_bot.kb.atoms import Needs, needs

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

RegexError = re2.error


@lru_cache(maxsize=65536)
def compile_pattern(pattern: str) -> re2._Regexp:
    """Compile with RE2 only (no backtracking fallback); raise RegexError on unsupported syntax."""
    return re2.compile(pattern, _OPTIONS)


# A bounded window (`(?s:.){0,1000}?`, `[^\n]{0,60}`) makes RE2's DFA track every position inside
# it: one such pattern took 16 ms on a 1,100-character paste. The same pattern with the window
# unbounded matches a superset of texts at DFA speed, so it runs first and the bound is checked
# only where it matched.
_WINDOW = re.compile(r"(?<!\\)\{([01]),(\d+)\}")
WINDOW_LOOSENED = 20


def loosened(pattern: str) -> str:
    """The pattern with every wide bounded repeat `{0,N}`/`{1,N}` made unbounded: it matches
    wherever the pattern matches, and more."""
    return _WINDOW.sub(
        lambda m: m.group(0) if int(m.group(2)) < WINDOW_LOOSENED else ("*" if m.group(1) == "0" else "+"),
        pattern,
    )


WHOLE_TEXT = 4096  # a paste this short is searched whole: a search per line would only add calls
LINES_SEARCHED = 32  # past this many lines holding a pattern's strings, the rest of the text is searched once


class PatternScan:
    """Which of many RE2 patterns occur in a text, and where each first matches.

    Every string that some pattern needs (triage_bot/kb/atoms.py) is searched for at once with
    one Aho-Corasick automaton over the case-folded text; only the patterns whose strings occur
    are run, and a pattern that cannot span lines is run only on the lines where its strings
    are: a match of such a pattern lies on one line, and that line holds a string of each of its
    requirements, so only the lines holding all of them are searched (most candidates of a 40k
    paste have their strings on different lines and never run). A pattern is compiled the first
    time it runs: a one-line CLI triage compiles a few dozen of the thousand.

    Measured side by side on the 2,079 distinct corpus pastes, first seen (docs/benchmarks.md):
    one RE2 `Set` of every pattern, whose lazy DFA never fits in memory on varied text, 3.98 ms
    a paste at the median; RE2's own literal prefilter (FilteredRE2) the same as this one per
    paste, but it compiles every pattern at start (160 ms, against 30-40 ms here).
    """

    def __init__(self, patterns: list[str], needs_of: Callable[[str], Needs] = needs):
        self.patterns = patterns
        self._needs = [needs_of(p) for p in patterns]
        self._always = [i for i, n in enumerate(self._needs) if not n.atoms]
        self._complete = [(1 << len(n.atoms)) - 1 for n in self._needs]  # a bit per requirement
        owners: dict[str, list[tuple[int, int]]] = {}
        for index, need in enumerate(self._needs):
            for requirement, strings in enumerate(need.atoms):
                for atom in strings:
                    owners.setdefault(atom, []).append((index, requirement))
        self._automaton: Any = None
        self._owners = list(owners.values())  # atom number -> (pattern, requirement) pairs
        self._atom_strings = list(owners)  # atom number -> the string
        # pattern -> for each requirement, the numbers of the strings that meet it
        self._requirement_atoms: list[list[list[int]]] = [[[] for _ in n.atoms] for n in self._needs]
        for number, pairs in enumerate(self._owners):
            for index, requirement in pairs:
                self._requirement_atoms[index][requirement].append(number)
        if owners:
            self._automaton = ahocorasick.Automaton()
            for number, atom in enumerate(owners):
                self._automaton.add_word(atom, (number, len(atom)))
            self._automaton.make_automaton()
        self._loose = {i: loose for i, p in enumerate(patterns) if (loose := loosened(p)) != p}

    def regex(self, index: int) -> re2._Regexp:
        return compile_pattern(self.patterns[index])

    def scan(self, text: str) -> list[tuple[int, Found]]:
        """(index, first match) of every pattern that occurs in `text`, in pattern order."""
        if not text:
            return []
        # RE2 runs on UTF-8 bytes and its Python wrapper re-encodes a str on every call (40 us
        # for 40,000 characters): the text is encoded once, searched as bytes, and only the spans
        # of the matches found are mapped back to characters
        lines = _Lines(text)
        met: dict[int, int] = {}  # pattern -> a bit for each requirement met
        where: dict[int, list[int]] = {}  # atom number -> character offsets
        local: _Local | None = None
        if self._automaton is not None:
            folded = text.casefold()
            aligned = len(folded) == len(text)  # casefold only ever lengthens: no character moved
            for end, (number, length) in self._automaton.iter(folded):
                where.setdefault(number, []).append(end - length + 1)
            for number in where:
                for index, requirement in self._owners[number]:
                    met[index] = met.get(index, 0) | (1 << requirement)
            if len(lines.data) > WHOLE_TEXT and aligned:  # offsets in the folded text are the text's
                local = _Local(lines, where, folded, self._atom_strings)
        candidates = [i for i, bits in met.items() if bits == self._complete[i]]
        found: list[tuple[int, Found]] = []
        for index in sorted([*candidates, *self._always]):
            match = self._first_match(index, lines, local)
            if match is not None:
                start, end = match.span()
                values = {
                    k: v.decode("utf-8", "replace") if v is not None else None
                    for k, v in match.groupdict().items()
                }
                found.append((index, Found(lines.char_offset(start), lines.char_offset(end), values)))
        return found

    def _first_match(self, index: int, lines: _Lines, local: _Local | None) -> Any:
        data = lines.data
        need = self._needs[index]
        if local is None or not need.one_line or not need.atoms:
            loose = self._loose.get(index)
            if loose is not None and compile_pattern(loose).search(data) is None:
                return None
            return self.regex(index).search(data)
        # A match of a one-line pattern lies on one line, and that line holds a string of each of
        # its requirements: only the lines that hold all of them are searched, and a pattern whose
        # strings never meet on one line is not run at all (most of a 40k paste's candidates).
        rows = local.lines_with_all(self._owner_atoms(index, local))
        if not rows:
            return None
        regex = self.regex(index)
        if len(rows) > LINES_SEARCHED:
            # strings on many lines: one search from the first of them costs less than a call a line
            return regex.search(data, lines.line_start_byte(rows[0]))
        for row in rows:  # in text order: the first line that matches holds the first match
            match = regex.search(data, lines.line_start_byte(row), lines.line_end_byte(row))
            if match is not None:
                return match
        return None

    def _owner_atoms(self, index: int, local: _Local) -> list[list[int]]:
        """For each requirement of pattern `index`, the numbers of its strings that occur."""
        where = local.where
        return [[n for n in numbers if n in where] for numbers in self._requirement_atoms[index]]


class _Local:
    """Where each string occurred, by line, worked out only for the patterns that need it."""

    def __init__(self, lines: _Lines, where: dict[int, list[int]], folded: str, strings: list[str]):
        self.lines, self.where, self.folded, self.strings = lines, where, folded, strings
        self._rows: dict[int, frozenset[int]] = {}

    def rows_of(self, number: int) -> frozenset[int]:
        rows = self._rows.get(number)
        if rows is None:
            rows = self._rows[number] = frozenset(self.lines.row(c) for c in self.where[number])
        return rows

    def lines_with_all(self, requirements: list[list[int]]) -> list[int]:
        """The line numbers that hold a string of every requirement, in text order.

        The rarest requirement's lines come from where its strings occurred; each other
        requirement is then checked on those lines only, by looking for its strings there (a
        common word such as "error" occurs hundreds of times in a 40k paste: listing its lines
        would cost more than the check)."""
        if not requirements or not all(requirements):
            return []
        ranked = sorted(requirements, key=lambda numbers: sum(len(self.where[n]) for n in numbers))
        rows: set[int] = set()
        for number in ranked[0]:
            rows |= self.rows_of(number)
        lines, folded, strings = self.lines, self.folded, self.strings
        for numbers in ranked[1:]:
            if not rows:
                return []
            kept = set()
            for row in rows:
                start, end = lines.row_bounds(row)
                if any(folded.find(strings[n], start, end) >= 0 for n in numbers):
                    kept.add(row)
            rows = kept
        return sorted(rows)


def _line_starts(find: Callable[[int], int]) -> list[int]:
    """Where each line starts, from `find(start)`: the next newline at or after `start`, or -1."""
    starts = [0]
    at = find(0)
    while at >= 0:
        starts.append(at + 1)
        at = find(at + 1)
    return starts


class _Lines:
    """A text's UTF-8 bytes, with where its lines start in characters and in bytes (the two differ
    only for a text that is not ASCII); each is worked out on first use."""

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode("utf-8")
        self.ascii = len(self.data) == len(text)

    @cached_property
    def row_starts(self) -> list[int]:
        """The character offset where each line starts."""
        return _line_starts(partial(self.text.find, "\n"))

    @cached_property
    def byte_starts(self) -> list[int]:
        """The byte offset where each line starts: the character offsets when the text is ASCII."""
        return self.row_starts if self.ascii else _line_starts(partial(self.data.find, b"\n"))

    def row(self, char: int) -> int:
        """The number of the line holding character `char` (0 for the first)."""
        return bisect_right(self.row_starts, char) - 1

    def row_bounds(self, row: int) -> tuple[int, int]:
        """The character span of line `row`, without its newline."""
        starts = self.row_starts
        return starts[row], (len(self.text) if row + 1 >= len(starts) else starts[row + 1] - 1)

    def line_start_byte(self, row: int) -> int:
        return self.byte_starts[row]

    def line_end_byte(self, row: int) -> int:
        """Where line `row` ends in bytes, before its newline."""
        starts = self.byte_starts
        return len(self.data) if row + 1 >= len(starts) else starts[row + 1] - 1

    def char_offset(self, byte: int) -> int:
        if self.ascii:
            return byte
        line = bisect_right(self.byte_starts, byte) - 1
        start = self.byte_starts[line]
        return self.row_starts[line] + len(self.data[start:byte].decode("utf-8", "replace"))


class Found(NamedTuple):
    """Where a pattern first matched (character offsets) and what its named groups captured."""

    start: int
    end: int
    values: dict[str, str | None]  # decoded from the UTF-8 the match was found in

    def span(self) -> tuple[int, int]:
        return self.start, self.end
