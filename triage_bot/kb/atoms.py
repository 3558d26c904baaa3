"""What a pattern needs to match: the literal strings one of which every match contains.

A paste is first searched for every such string at once (Aho-Corasick, one pass); only the
patterns whose strings occur are run. The strings are read from the pattern's parse tree:

- a run of literal characters is one required string ("CUDA out of memory");
- an alternation requires one string of each alternative, so the union (`A|B` -> {A, B});
- a group or a repeat of at least once requires what its contents require;
- a sequence requires all that its parts require: up to three requirements are kept, those whose
  shortest string is longest first, and a pattern runs only when each of them is met.

Everything is case-folded, and the paste is case-folded before the search: a case-sensitive
pattern then passes on more pastes than it matches, never on fewer. A pattern whose requirement
has a string shorter than `MIN_ATOM`, or that the parser does not read, requires nothing and runs
on every paste.

The parser is Python's own (`re._parser`); RE2 syntax it does not know is rewritten first into
a form that matches at least as much (`\\p{Han}` -> `.`), so a requirement is never too strict.
The same tree says whether a pattern can match a newline: a pattern that cannot only needs the
lines where its strings occur to be searched.
"""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

MIN_ATOM = 3
_GLOBAL_FLAGS = re.compile(r"\(\?[imsU]+\)")  # RE2 allows them anywhere; Python only at the start
_DOTALL = re.compile(r"\(\?[a-zA-Z]*s[a-zA-Z]*[:)]")
_RE2_ONLY = [
    (re.compile(r"\\p\{\w+\}|\\p[A-Z]|\\pN"), "."),  # a Unicode class never matches a newline
    (re.compile(r"\\P\{\w+\}|\\P[A-Z]|\\C"), r"[\\s\\S]"),  # a negated class or any byte may
    (re.compile(r"\\z"), r"\\Z"),
]
_UNREADABLE = re.compile(r"\[:\^?[a-z]+:\]|\\Q")  # POSIX classes and quoting read differently in Python
_NEWLINE = 10


REQUIREMENTS_KEPT = 3
FURTHER_MIN = 6


@dataclass(frozen=True, slots=True)
class Needs:
    """What a pattern needs: from each of `atoms`, one string (none: it always runs), best first;
    and whether a match can span lines."""

    atoms: tuple[frozenset[str], ...]
    one_line: bool


def needs(pattern: str) -> Needs:
    if _UNREADABLE.search(pattern):
        return Needs((), False)
    readable = _GLOBAL_FLAGS.sub("", pattern)
    for old, new in _RE2_ONLY:
        readable = old.sub(new, readable)
    try:
        tree = sre_parse.parse(readable)
    except (re.error, RecursionError, OverflowError):
        return Needs((), False)
    ranked = sorted(_sequence(list(tree)), key=_rank, reverse=True)[:REQUIREMENTS_KEPT]
    # past the best requirement, a short string ("the ", "for") occurs thousands of times in a big
    # paste and narrows almost nothing: only long ones are kept as further requirements
    required = ranked[:1] + [strings for strings in ranked[1:] if min(map(len, strings)) >= FURTHER_MIN]
    atoms = tuple(frozenset(s.casefold() for s in strings) for strings in required)
    one_line = not _DOTALL.search(pattern) and not _spans_lines(list(tree))
    return Needs(atoms, one_line)


def _rank(strings: AbstractSet[str]) -> tuple[int, int]:
    return min(map(len, strings)), -len(strings)


def _useful(strings: set[str]) -> bool:
    return bool(strings) and min(map(len, strings)) >= MIN_ATOM


def _sequence(items: list[tuple[Any, Any]]) -> list[set[str]]:
    """Every requirement of a sequence: each literal run, and what each part requires."""
    required: list[set[str]] = []
    run: list[str] = []
    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        if run:
            required.append({"".join(run)})
            run = []
        required.extend(_node(op, av))
    if run:
        required.append({"".join(run)})
    return [strings for strings in required if _useful(strings)]


def _node(op: Any, av: Any) -> list[set[str]]:
    if op is sre.SUBPATTERN:
        return _sequence(list(av[-1]))
    if op is sre.ATOMIC_GROUP:
        return _sequence(list(av))
    if op is sre.BRANCH:
        union: set[str] = set()
        for alternative in av[1]:
            required = _sequence(list(alternative))
            if not required:
                return []
            union |= max(required, key=_rank)  # one alternative's best: it is needed when it is taken
        return [union]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _, inner = av
        return _sequence(list(inner)) if low >= 1 else []
    return []


def _class_has_newline(items: list[tuple[Any, Any]]) -> bool:
    negated = any(op is sre.NEGATE for op, _ in items)
    has = False
    for op, av in items:
        if (op is sre.LITERAL and av == _NEWLINE) or (op is sre.RANGE and av[0] <= _NEWLINE <= av[1]):
            has = True
        elif op is sre.CATEGORY and av in (sre.CATEGORY_SPACE, sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_NOT_WORD):
            has = True  # \s, \D and \W all hold the newline
    return has != negated


def _spans_lines(items: list[tuple[Any, Any]]) -> bool:
    """Can some match of these nodes contain a newline?"""
    for op, av in items:
        if op is sre.LITERAL and av == _NEWLINE:
            return True
        if op is sre.NOT_LITERAL and av != _NEWLINE:
            return True
        if op is sre.IN and _class_has_newline(list(av)):
            return True
        if op is sre.SUBPATTERN and _spans_lines(list(av[-1])):
            return True
        if op is sre.ATOMIC_GROUP and _spans_lines(list(av)):
            return True
        if op is sre.BRANCH and any(_spans_lines(list(alt)) for alt in av[1]):
            return True
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and _spans_lines(list(av[2])):
            return True
        if op in (sre.GROUPREF, sre.GROUPREF_EXISTS, sre.ASSERT, sre.ASSERT_NOT):
            return True  # not RE2 syntax: assume the worst
    return False
