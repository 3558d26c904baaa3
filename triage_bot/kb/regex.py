"""RE2 compilation shared by validation and matching: linear-time, and quiet on bad patterns."""

from __future__ import annotations

import re
from functools import lru_cache

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

RegexError = re2.error


@lru_cache(maxsize=65536)
def compile_pattern(pattern: str) -> re2._Regexp:
    """Compile with RE2 only (no backtracking fallback); raise RegexError on unsupported syntax."""
    return re2.compile(pattern, _OPTIONS)


# RE2's FilteredRE2 keeps its literal atoms in one case-insensitive set; past about a hundred
# patterns that set's lazy DFA no longer fits its memory and is rebuilt on every new paste.
# Measured on the 2,079 distinct corpus pastes (first pass / warm, ms a paste): 1,038 patterns in
# one filter 0.77 / 0.66, chunks of 200 0.48 / 0.33, of 100 0.43 / 0.23, of 50 0.47 / 0.28.
FILTER_CHUNK = 100
# A bounded window (`(?s:.){0,1000}?`, `[^\n]{0,60}`) makes RE2's DFA track every position inside
# it: one such pattern took 16 ms on a 1,100-character paste. The same pattern with the window
# unbounded matches a superset of texts at DFA speed, so the scan runs that form and checks the
# bound only where it fired.
_WINDOW = re.compile(r"(?<!\\)\{([01]),(\d+)\}")
WINDOW_LOOSENED = 20


def loosened(pattern: str) -> str:
    """The pattern with every wide bounded repeat `{0,N}`/`{1,N}` made unbounded: it matches
    wherever the pattern matches, and more."""
    return _WINDOW.sub(lambda m: m.group(0) if int(m.group(2)) < WINDOW_LOOSENED else ("*" if m.group(1) == "0" else "+"),
                       pattern)


class PatternScan:
    """Which of many RE2 patterns occur in a text, each pattern compiled once.

    Literal atoms that each pattern needs are found first; only the patterns whose atoms are all
    there are run (RE2's FilteredRE2). One RE2 `Set` of every pattern does the same in one pass,
    but its DFA of hundreds of patterns never fits in memory on varied input: on pastes the
    process has not seen, it costs 8 times as much.
    """

    def __init__(self, patterns: list[str]):
        self._filters: list[tuple[int, re2.Filter]] = []
        self.regexes: list[re2._Regexp] = []  # each pattern compiled, for spans and captures
        self._bounded: dict[int, re2._Regexp] = {}  # patterns scanned in a loosened form
        for start in range(0, len(patterns), FILTER_CHUNK):
            chunk = re2.Filter()
            for index, pattern in enumerate(patterns[start : start + FILTER_CHUNK], start):
                loose = loosened(pattern)
                chunk.Add(loose, _OPTIONS)
                if loose != pattern:
                    self._bounded[index] = compile_pattern(pattern)
            chunk.Compile()
            self._filters.append((start, chunk))
            for index in range(start, start + len(patterns[start : start + FILTER_CHUNK])):
                self.regexes.append(self._bounded.get(index) or chunk.re(index - start))

    def scan(self, text: str) -> list[int]:
        """Indexes, in order, of the patterns that occur somewhere in `text`."""
        data = text.encode("utf-8")
        found: list[int] = []
        for start, chunk in self._filters:
            found.extend(start + i for i in chunk.Match(data) or ())
        if self._bounded:
            found = [i for i in found if i not in self._bounded or self._bounded[i].search(text) is not None]
        return found
