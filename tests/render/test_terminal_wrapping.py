"""The terminal never cuts a flag or an identifier in two: people copy them from `engines` and `faq`."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from rich.console import Console

from triage_bot.cli.main import cli
from triage_bot.core import default_triager
from triage_bot.render.terminal import engines_table, wrap_words


def _long_words(text: str) -> set[str]:
    return {w for w in text.split() if len(w) >= 12}


@pytest.mark.parametrize("width", [60, 80, 100, 120, 160, 220])
def test_the_engine_matrix_keeps_every_long_word_whole_at_any_width(width: int) -> None:
    kb = default_triager().kb
    console = Console(width=width, record=True, color_system=None)
    console.print(engines_table(kb, width))
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= width
    shown = " ".join(lines)
    words = {w for e in kb.engines.values() for cell in e.matrix.values() for w in _long_words(cell)}
    assert words, "the matrix has long identifiers to keep"
    cut = sorted(w for w in words if w not in shown)
    assert not cut, f"cut at width {width}: {cut[:5]}"


def test_wrap_words_breaks_at_spaces_only() -> None:
    text = "raise it with --mem-fraction-static=0.85 when start-up says so " * 3
    wrapped = wrap_words(text, 20)
    assert all(len(line) <= 20 or " " not in line for line in wrapped.splitlines())
    assert wrapped.count("--mem-fraction-static=0.85") == 3


def test_the_faq_answer_is_wrapped_to_the_terminal_without_splitting_flags() -> None:
    result = CliRunner().invoke(cli, ["faq", "what does --mem-fraction-static do"], env={"COLUMNS": "50"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "--mem-fraction-static" in result.output
    assert all(len(line) <= 50 or not re.search(r"\s", line.strip()) for line in lines), lines
