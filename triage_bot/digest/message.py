"""The digest as Slack Block Kit, from a sandboxed Jinja2 template, kept within Slack's limits.

The template is a file in this package, compiled once; what reaches it is data only (numbers,
engine and signature names), and every `{{ value }}` is escaped for mrkdwn by the environment's
`finalize` hook, so no name from an engine or a paste is ever rendered as a template or as a
mention. Long lists are cut to fit: a section holds at most 3,000 characters, a message at most
50 blocks, and Slack rejects about 12,000 characters of block text in one message.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from triage_bot.blockkit import (
    MAX_BLOCKS,
    escape,
    limit_problems,  # noqa: F401 - re-exported for the digest's callers
)
from triage_bot.blockkit import MAX_HEADER as HEADER_MAX
from triage_bot.blockkit import MAX_SECTION as SECTION_MAX
from triage_bot.blockkit import MAX_TOTAL_TEXT as TOTAL_TEXT_MAX
from triage_bot.digest.builder import Digest

TEMPLATES = Path(__file__).with_name("templates")
LIST_MAX = 15  # rows per list section


def _finalize(value: Any) -> Any:
    return escape(value) if isinstance(value, str) else value


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=False,
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def change(ratio: float | None) -> str:
    if ratio is None:
        return "no comparison"
    arrow = "▲" if ratio > 0 else "▼" if ratio < 0 else "="
    return f"{arrow} {abs(ratio) * 100:.0f}%"


def context(d: Digest) -> dict[str, Any]:
    n, p = d.numbers, d.previous
    return {
        "n": n,
        "p": p,
        "trend_incidents": change(d.trend(n.incidents, p.incidents)),
        "trend_mttr": change(d.trend(n.mttr_seconds, p.mttr_seconds)),
        "mtta": duration(n.mtta_seconds),
        "mttr": duration(n.mttr_seconds),
        "by_engine": n.by_engine[:LIST_MAX],
        "top": d.top_signatures,
        "times": [
            {
                "signature_id": t.signature_id,
                "mtta": duration(t.mtta_s),
                "mttr": duration(t.mttr_s),
                "resolved": t.resolved,
            }
            for t in d.times[:LIST_MAX]
        ],
        "wrong": [
            {
                "signature_id": w.signature_id,
                "reports": w.reports,
                "chosen": [{"id": k, "n": v} for k, v in list(w.chosen.items())[:3]],
            }
            for w in d.wrong[:LIST_MAX]
        ],
        "uptime": [
            {
                "engine": u.engine,
                "checks": u.checks,
                "down": u.down,
                "maintenance": u.maintenance,
                "percent": "n/a" if u.ratio is None else f"{u.ratio * 100:.2f}%",
            }
            for u in sorted(n.uptime, key=lambda u: (u.ratio if u.ratio is not None else 2.0, u.engine))[
                :LIST_MAX
            ]
        ],
    }


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 2]
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    return cut + "\n…"


def digest_title(d: Digest) -> str:
    return f"Weekly digest: {d.days[0]:%a %d %b} – {d.days[-1]:%a %d %b %Y}" if d.days else "Weekly digest"


def digest_blocks(d: Digest, *, chart_note: bool = True) -> list[dict[str, Any]]:
    text = environment().get_template("digest.mrkdwn.j2").render(**context(d))
    sections = [s.strip() for s in text.split("@@section@@") if s.strip()]
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": digest_title(d)[:HEADER_MAX], "emoji": True},
        },
    ]
    budget = TOTAL_TEXT_MAX - 500
    for section in sections:
        body = _clip(section, min(SECTION_MAX, max(200, budget)))
        budget -= len(body)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body}})
        blocks.append({"type": "divider"})
    notes = [f"{d.start:%Y-%m-%d %H:%M} – {d.end:%Y-%m-%d %H:%M} UTC ({escape(d.timezone)} days)"]
    if chart_note:
        notes.append("chart in the thread")
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": t} for t in notes]})
    return blocks[:MAX_BLOCKS]


def digest_text(d: Digest) -> str:
    """The notification fallback text."""
    n = d.numbers
    return f"{digest_title(d)}: {n.incidents} incidents, {n.new} new, {n.recurring} recurring, MTTR {duration(n.mttr_seconds)}"
