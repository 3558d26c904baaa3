"""The literal-prefiltered scan finds exactly the patterns that a search with each one finds."""

from __future__ import annotations

from tests.support.pastes import big_pastes, distinct_texts
from triage_bot.core import default_triager
from triage_bot.kb.regex import FILTER_CHUNK, PatternScan
from triage_bot.text.normalize import normalize


def test_the_scan_fires_what_each_pattern_finds_on_every_held_out_paste() -> None:
    compiled = default_triager().matcher.c
    assert len(compiled.entries) > 2 * FILTER_CHUNK  # several filters, not one
    differ = []
    for text in [*distinct_texts(), *big_pastes(4, 40_000)]:
        clean = normalize(text).text
        each = [i for i, entry in enumerate(compiled.entries) if entry.regex.search(clean)]
        if compiled.scan(clean) != each:
            differ.append(clean[:80])
    assert not differ


def test_patterns_without_a_literal_still_run_and_captures_survive() -> None:
    scan = PatternScan([r"\d+", r"(?i)cuda OUT of memory", r"(?P<gib>\d+(?:\.\d+)?) GiB", r"\p{Han}{2}"])
    assert scan.scan("12") == [0]
    assert scan.scan("!") == []
    assert scan.scan("CUDA out of Memory: 2.5 GiB 显存") == [0, 1, 2, 3]
    assert scan.regexes[2].search("tried 2.5 GiB").groupdict() == {"gib": "2.5"}
    assert PatternScan([]).scan("anything") == []


def test_a_bounded_window_is_scanned_loose_and_checked_exactly() -> None:
    scan = PatternScan([r"import tensorrt_llm(?s:.){0,50}?undefined symbol", r"x[^\n]{0,30}y"])
    assert scan.scan("import tensorrt_llm\n" + "a" * 40 + "\nundefined symbol: _Z1") == [0]
    assert scan.scan("import tensorrt_llm\n" + "a" * 60 + "\nundefined symbol: _Z1") == []  # the loose form fires
    assert scan.scan("x" + "-" * 31 + "y") == []
    assert scan.scan("x" + "-" * 30 + "y") == [1]
    assert scan.regexes[0].pattern.endswith("{0,50}?undefined symbol")  # spans come from the exact pattern
