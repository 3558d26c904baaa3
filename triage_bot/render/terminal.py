"""Render an Answer for a terminal with rich: the same content a Slack reply carries."""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from triage_bot.answer import Answer, confidence_word

if TYPE_CHECKING:
    from triage_bot.kb.loader import KnowledgeBase

CUT_NOTE = (
    "The paste was very long: the bot read its start, its end and the error lines in between, "
    "and cut lines longer than 4,000 characters in the middle."
)


def answer_renderable(answer: Answer) -> Panel:
    parts: list[RenderableType] = []
    if answer.truncated_input:
        parts.append(Text(CUT_NOTE, style="yellow"))
    if answer.match is None:
        parts.append(Text("No known signature matched this paste.", style="bold"))
        if answer.note:
            parts.append(Text(answer.note, style="yellow"))
        if answer.candidates:
            parts.append(Text("Nearest candidates:", style="bold"))
            for c in answer.candidates:
                parts.append(Text(f"  {c.id}  {c.title}  ({c.confidence:.0%})"))
        return Panel(Group(*parts), title="triage-bot", border_style="yellow")

    m = answer.match
    header = Text()
    header.append(f"{m.title}\n", style="bold")
    header.append(f"{m.id}", style="cyan")
    header.append(
        f" · {m.engine} · {m.severity} · confidence {m.confidence:.0%} ({confidence_word(m.confidence)})"
    )
    parts.append(header)
    if m.line:
        parts.append(Text("matched: ", style="dim") + Text(m.line))
    if answer.note:
        parts.append(Text(answer.note, style="yellow"))
    if answer.family:
        parts.append(
            Text(f"Area from the frames: {answer.family.id} ({answer.family.title})", style="magenta")
        )
    if answer.cause:
        parts.append(Text("\nWhy", style="bold underline"))
        parts.append(Text(answer.cause))
    if answer.recovery:
        parts.append(Text("\nRecovery", style="bold underline"))
        for line in answer.recovery.splitlines():
            if line.startswith("$ "):
                parts.append(Syntax(line[2:], "bash", theme="ansi_dark", word_wrap=True))
            else:
                parts.append(Text(line))
    if answer.protocol:
        p = answer.protocol
        parts.append(Text("\nTriage protocol", style="bold underline"))
        for title, items in (("Confirm", p.confirm), ("Collect", p.collect), ("Workarounds", p.workarounds)):
            parts.append(Text(f"{title}:", style="bold"))
            parts.extend(Text(f"  • {item}") for item in items)
        report = p.report.get(m.engine) or p.report.get("default")
        if report:
            parts.append(Text("Upstream report:", style="bold"))
            parts.append(Text(f"  {report}"))
    if answer.faq:
        parts.append(Text("\nFAQ", style="bold underline"))
        parts.append(Text(answer.faq))
    if answer.alternative is not None:
        alt = answer.alternative
        parts.append(Text(f"\nClose alternative: {alt.id} {alt.title} ({alt.confidence:.0%})", style="dim"))
    if answer.others:
        parts.append(Text("\nAlso in this paste: " + ", ".join(o.id for o in answer.others), style="dim"))
    if answer.docs:
        parts.append(Text("\nDocs: " + "  ".join(answer.docs), style="dim"))
    return Panel(
        Group(*parts), title=escape("triage-bot"), border_style="green" if m.confidence >= 0.8 else "yellow"
    )


def print_answer(answer: Answer, console: Console | None = None) -> None:
    (console or Console()).print(answer_renderable(answer))


def engines_table(kb: KnowledgeBase, width: int = 120) -> RenderableType:
    """The engine comparison matrix: one column per engine header, in its `order`.

    No flag or identifier is ever cut mid-word (`--mem-fraction-s` / `tatic` misleads anyone who
    copies it): each column is at least as wide as its longest word, and when the terminal is too
    narrow for that, the matrix is printed one dimension at a time instead of as a table."""
    ordered = sorted(kb.engines.values(), key=lambda e: (e.order, e.id))
    rows = [(dim.title, [e.matrix.get(dim.key, "—") for e in ordered]) for dim in kb.matrix_dimensions]
    title = " vs ".join(e.name for e in ordered)
    first = max(max((_longest_word(t) for t, _ in rows), default=9), min(22, max(len(t) for t, _ in rows)))
    columns = [max((_longest_word(cells[i]) for _, cells in rows), default=8) for i in range(len(ordered))]
    # each column has one space of padding either side and one border character
    if first + sum(columns) + 3 * (len(columns) + 1) + 1 > width:
        return _stacked(title, [e.name for e in ordered], rows)
    table = Table(title=title, show_lines=True, width=width)
    table.add_column("Dimension", style="bold", width=first)
    # the room left over is shared evenly, on top of each column's longest word
    extra = (width - first - sum(columns) - 3 * (len(columns) + 1) - 1) // len(columns)
    for engine, least in zip(ordered, columns, strict=True):
        table.add_column(engine.name, width=least + extra)
    for dim_title, cells in rows:
        table.add_row(dim_title, *cells)
    return table


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def _stacked(title: str, names: list[str], rows: list[tuple[str, list[str]]]) -> RenderableType:
    parts: list[RenderableType] = [Text(title, style="bold")]
    for dim_title, cells in rows:
        parts.append(Text(f"\n{dim_title}", style="bold underline"))
        for name, cell in zip(names, cells, strict=True):
            parts.append(Text(f"{name}: ", style="bold") + Text(cell))
    return Group(*parts)


def wrap_words(text: str, width: int) -> str:
    """Plain text wrapped at spaces only: a long flag or URL runs past the edge rather than being
    split (the FAQ's answers name flags that people copy). A line's indent and bullet ("  - ")
    carry over to its continuation lines."""
    out = []
    for line in text.splitlines():
        lead = re.match(r"\s*(?:[-•*] )?", line)
        indent = " " * (lead.end() if lead else 0)
        out.append(
            textwrap.fill(
                line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
            )
            if line
            else ""
        )
    return "\n".join(out)


_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_([^_\n]+)_(?![\w_])")
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"<(https?://[^|>\s]+)\|([^>]+)>")


def mrkdwn_to_text(text: str) -> str:
    """Slack mrkdwn as plain terminal text: *bold*, _italic_ and `code` marks dropped, links as
    `label (url)`, and the three escaped characters restored (`digest --dry-run` printed them raw)."""
    text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})", text)
    text = _CODE.sub(r"\1", _ITALIC.sub(r"\1", _BOLD.sub(r"\1", text)))
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
