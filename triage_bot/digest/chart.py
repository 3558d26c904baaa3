"""The digest's chart: one PNG, three panels, drawn with matplotlib's Agg backend (no display needed).

Panels: incidents per day by engine (stacked, the full width), top signatures (each bar in its
engine's colour) and uptime per monitored engine on a 0-100% axis. Three panels with large type,
so that the chart can still be read as a Slack thumbnail; the week against the one before and the
MTTA/MTTR per signature are in the digest's text, which says them better than bars.

The rules the chart keeps (tests/digest/test_digest.py holds each one):
- an engine keeps its colour week to week: colours follow the knowledge base's engine order
  (each engine header's `order`), never this week's incident ranking;
- the palette is Okabe-Ito's, readable with the common colour-vision deficiencies (no red/green
  pair);
- uptime starts at 0%, and every engine has a bar and a label, 0% included (a grey track shows the
  whole 0-100% range behind each bar).

The plotted numbers are also written into the PNG's text chunk `triage-digest`, so a test (or a
curious reader) can check what was drawn without reading pixels.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: never try to open a window on a server

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from triage_bot.digest.builder import Digest

# Okabe & Ito (2008), "Color Universal Design": distinguishable under protanopia, deuteranopia and
# tritanopia. Yellow (#F0E442) is left out: it vanishes on white.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
OTHER = "#999999"
MAX_ENGINES = len(PALETTE)
THIS_WEEK, LAST_WEEK = "#0072B2", "#A6CBE3"
UPTIME, TRACK = "#4D4D4D", "#E6E6E6"  # neutral: an uptime bar is not an engine's colour
FONT = 13  # a 1200-pixel-wide chart shown as a 360-pixel thumbnail keeps this legible when opened


def engine_colors(engines: Sequence[str], known: Sequence[str] = ()) -> dict[str, str]:
    """A colour per engine that does not depend on this week's ranking: the engines the knowledge
    base knows take the palette in its order; any other engine takes a free colour in name order."""
    slots = {engine: i for i, engine in enumerate(known[:MAX_ENGINES])}
    free = iter(i for i in range(MAX_ENGINES) if i not in slots.values())
    colors: dict[str, str] = {}
    for engine in sorted(engines, key=lambda e: (e not in slots, slots.get(e, 0), e)):
        slot = slots.get(engine)
        if slot is None:
            slot = next(free, None)
        colors[engine] = OTHER if slot is None else PALETTE[slot]
    return colors


def series(d: Digest, known: Sequence[str] = ()) -> dict[str, Any]:
    """What the chart plots, panel by panel (also stored in the PNG)."""
    colors = engine_colors([*d.per_day, *(g.engine for g in d.top_signatures)], known)
    return {
        "days": [day.isoformat() for day in d.days],
        "incidents_per_day": dict(d.per_day),
        "top_signatures": {f"{g.signature_id} · {g.engine}": g.incidents for g in d.top_signatures},
        "top_signature_engines": {f"{g.signature_id} · {g.engine}": g.engine for g in d.top_signatures},
        "new_vs_recurring": {
            "this": [d.numbers.new, d.numbers.recurring],
            "previous": [d.previous.new, d.previous.recurring],
        },
        "mtta_mttr_minutes": {t.signature_id: [_min(t.mtta_s), _min(t.mttr_s)] for t in d.times[:8]},
        "trend": {
            "incidents": [d.previous.incidents, d.numbers.incidents],
            "occurrences": [d.previous.occurrences, d.numbers.occurrences],
        },
        "uptime_percent": {
            u.engine: None if u.ratio is None else round(u.ratio * 100, 3) for u in d.numbers.uptime[:12]
        },
        "colors": colors,
    }


def _min(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 60.0, 2)


def render_png(d: Digest, known: Sequence[str] = (), dpi: int = 100) -> bytes:
    """The chart; `known` is the knowledge base's engines in their order (they fix the colours)."""
    s = series(d, known)
    fig = Figure(figsize=(12, 9), dpi=dpi, layout="constrained")
    axes = fig.subplot_mosaic([["day", "day"], ["top", "uptime"]])
    start = d.days[0].isoformat() if d.days else ""
    end = d.days[-1].isoformat() if d.days else ""
    fig.suptitle(f"Incidents {start} – {end} ({d.timezone})", fontsize=FONT + 5)
    _per_day_panel(axes["day"], d, s)
    _top_signatures_panel(axes["top"], s)
    _uptime_panel(axes["uptime"], s)
    drawn = {**s, "panels": [ax.get_title() for ax in fig.axes]}  # read back from the figure itself
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"triage-digest": json.dumps(drawn, sort_keys=True)})
    return buf.getvalue()


def _per_day_panel(ax: Any, d: Digest, s: dict[str, Any]) -> None:
    labels = [day.strftime("%a %d") for day in d.days]
    bottom = [0] * len(labels)
    for engine, values in s["incidents_per_day"].items():
        ax.bar(labels, values, bottom=bottom, label=engine, color=s["colors"][engine])
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_title("Incidents per day by engine", fontsize=FONT + 2)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelsize=FONT)
    if s["incidents_per_day"]:
        ax.set_ylim(0, max(bottom) * 1.35 + 0.5)  # head room for the legend
        ax.legend(fontsize=FONT, loc="upper right", ncols=min(3, len(s["incidents_per_day"])))
    else:
        _empty(ax)


def _top_signatures_panel(ax: Any, s: dict[str, Any]) -> None:
    top = s["top_signatures"]
    ax.set_title("Top signatures (incidents)", fontsize=FONT + 2)
    if not top:
        _empty(ax)
        return
    names = list(top)[::-1]
    bars = ax.barh(
        names, [top[n] for n in names], color=[s["colors"][s["top_signature_engines"][n]] for n in names]
    )
    ax.bar_label(bars, padding=3, fontsize=FONT)
    ax.tick_params(axis="y", labelsize=FONT - 1)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, max(top.values()) * 1.15 + 0.5)


def _uptime_panel(ax: Any, s: dict[str, Any]) -> None:
    uptime = {k: v for k, v in s["uptime_percent"].items() if v is not None}
    ax.set_title("Uptime per engine (from the checks)", fontsize=FONT + 2)
    if not uptime:
        _empty(ax)
        return
    names = list(uptime)[::-1]
    ax.barh(names, [100.0] * len(names), color=TRACK)  # the whole range, so 0% still shows a row
    bars = ax.barh(names, [uptime[n] for n in names], color=UPTIME)
    # the figure beside the bar's end, in dark text, so that a 0% or 3% bar is labelled too
    ax.bar_label(bars, labels=[f"{uptime[n]:.2f}%" for n in names], padding=4, fontsize=FONT)
    ax.set_xlim(0, 122)  # room for "100.00%" right of a full bar
    ax.set_xticks([0, 25, 50, 75, 100], ["0%", "25%", "50%", "75%", "100%"], fontsize=FONT)
    ax.tick_params(axis="y", labelsize=FONT)
    ax.set_xlabel("share of checks serving", fontsize=FONT)


def _empty(ax: Any) -> None:
    ax.text(
        0.5,
        0.5,
        "nothing this week",
        ha="center",
        va="center",
        transform=ax.transAxes,
        color="#777777",
        fontsize=FONT,
    )
    ax.set_xticks([])
    ax.set_yticks([])
