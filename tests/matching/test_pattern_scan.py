"""The literal prefilter finds exactly what a search with each pattern finds, at the same place."""

from __future__ import annotations

import pytest

from tests.support.pastes import big_pastes, distinct_texts
from triage_bot.core import default_triager
from triage_bot.kb.atoms import needs
from triage_bot.kb.regex import WHOLE_TEXT, PatternScan, compile_pattern
from triage_bot.text.normalize import normalize


def _spans(scan: PatternScan, text: str) -> list[tuple[int, tuple[int, int], dict]]:
    return [(i, found.span(), found.values) for i, found in scan.scan(text)]


def _each(patterns: list[str], text: str) -> list[tuple[int, tuple[int, int], dict]]:
    out = []
    for i, pattern in enumerate(patterns):
        match = compile_pattern(pattern).search(text)
        if match is not None:
            out.append((i, match.span(), match.groupdict()))
    return out


def test_the_scan_fires_what_each_pattern_finds_on_every_held_out_paste() -> None:
    compiled = default_triager().matcher.c
    patterns = compiled.patterns.patterns
    differ = []
    for text in [*distinct_texts(), *big_pastes(6, 40_000), *big_pastes(1, 1 << 20, seed=11)]:
        clean = normalize(text).text
        if _spans(compiled.patterns, clean) != _each(patterns, clean):
            differ.append(clean[:80])
    assert not differ


@pytest.mark.parametrize("filler", ["ascii filler line\n", "日志 filler ß line\n"])
def test_first_matches_and_captures_on_long_and_non_ascii_text(filler: str) -> None:
    patterns = [
        r"(?i)cuda OUT of memory",  # case-insensitive, one line
        r"(?P<gib>\d+(?:\.\d+)?) GiB",  # a capture
        r"\p{Han}{2}",  # no literal: runs on every text
        r"Traceback[^\n]*\n\s+File",  # spans lines
        r"\d+",  # nothing to look for
        r"\Afiller",  # anchored at the start of the whole text
    ]
    head = filler * (WHOLE_TEXT // len(filler) + 5)  # long enough that lines are searched one by one
    text = (
        head
        + 'x CUDA out of Memory: 2.5 GiB 显存\nTraceback (most recent call last):\n  File "a.py"\n'
        + head
    )
    assert _spans(PatternScan(patterns), text) == _each(patterns, text)
    assert PatternScan(patterns).scan("") == []


def test_a_pattern_on_many_lines_finds_its_first_match() -> None:
    text = "".join(f"error {n}: nothing\n" for n in range(400)) + "error 7: the CUDA thing\n"
    patterns = [r"error (?P<n>\d+): the CUDA"]
    assert _spans(PatternScan(patterns), text) == _each(patterns, text) != []


def test_a_bounded_window_is_scanned_loose_and_checked_exactly() -> None:
    scan = PatternScan([r"import tensorrt_llm(?s:.){0,50}?undefined symbol", r"x[^\n]{0,30}y"])
    assert [i for i, _ in scan.scan("import tensorrt_llm\n" + "a" * 40 + "\nundefined symbol: _Z1")] == [0]
    assert scan.scan("import tensorrt_llm\n" + "a" * 60 + "\nundefined symbol: _Z1") == []  # loose form fires
    assert scan.scan("x" + "-" * 31 + "y") == []
    assert [i for i, _ in scan.scan("x" + "-" * 30 + "y")] == [1]


@pytest.mark.parametrize(
    ("pattern", "atoms", "one_line"),
    [
        (r"(?i)CUDA out of memory", [{"cuda out of memory"}], True),
        (r"connection refused|ECONNREFUSED", [{"connection refused", "econnrefused"}], True),
        (
            r"(?i)\b(fp8|nvfp4)\b[^\n]{0,60}(not supported|unsupported)",
            [{"not supported", "unsupported"}],  # "fp8" is too short to be a further requirement
            True,
        ),
        (r"Error:\s+foo", [{"error:"}], False),  # \s holds the newline
        (r"CUDA error: out of memory", [{"cuda error: out of memory"}], True),
        (r"Tried to allocate[^\n]*CUDA out of memory", [{"cuda out of memory"}, {"tried to allocate"}], True),
        (r"x[^\n]{0,5}y", [], True),  # single characters are no use
        (r"a(bc)?defg", [{"defg"}], True),  # an optional part is not needed
        (r"NCCL [Ee]rror\s*[:：]", [{"nccl "}], False),  # a colon in a class is not a POSIX class
        (r"x[[:alpha:]]yyy", [], False),  # POSIX classes read differently in Python: nothing needed
        (r"foo(?s:.){0,9}bar", [{"foo"}], False),
        (r"longer(?s:.){0,9}string", [{"longer"}, {"string"}], False),  # both long enough to narrow
        (r"\p{Han}zzz", [{"zzz"}], True),
        (r"abc\nxyz", [{"abc\nxyz"}], False),
        (r"(?P<x>first)|mid (?i)second", [{"first", "mid second"}], True),  # RE2 allows flags mid-pattern
    ],
)
def test_what_a_pattern_needs(pattern: str, atoms: list[set[str]], one_line: bool) -> None:
    found = needs(pattern)
    assert sorted(map(sorted, found.atoms)) == sorted(map(sorted, atoms))
    assert found.one_line is one_line
