"""RE2 compilation shared by validation and matching: linear-time, and quiet on bad patterns."""

from __future__ import annotations

from functools import lru_cache

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

RegexError = re2.error


@lru_cache(maxsize=65536)
def compile_pattern(pattern: str) -> re2._Regexp:
    """Compile with RE2 only (no backtracking fallback); raise RegexError on unsupported syntax."""
    return re2.compile(pattern, _OPTIONS)


def new_search_set(max_mem: int) -> re2.Set:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = max_mem
    return re2.Set.SearchSet(options)
