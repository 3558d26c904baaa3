"""The digest's chart: one PNG, six panels, drawn with matplotlib's Agg backend (no display needed).

Panels: incidents per day by engine (stacked), top signatures, new vs recurring (this week and
the one before), MTTA/MTTR per signature, trend against the previous week, uptime per engine.
Engine colours come from a fixed palette so the same engine keeps its colour week to week. The
plotted numbers are also written into the PNG's text chunk `triage-digest`, so a test (or a
curious reader) can check what was drawn without reading pixels.
"""

from __future__ import annotations

import io
import json
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: never try to open a window on a server

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from triage_bot.digest.builder import Digest

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
OTHER = "#7f7f7f"
MAX_ENGINES = len(PALETTE)
THIS_WEEK, LAST_WEEK = "#1f77b4", "#aec7e8"


def engine_colors(engines: list[str]) -> dict[str, str]:
    return {e: PALETTE[i % len(PALETTE)] for i, e in enumerate(engines[:MAX_ENGINES])}


def series(d: Digest) -> dict[str, Any]:
    """What the chart plots, panel by panel (also stored in the PNG)."""
    engines = list(d.per_day)
    shown = engines[:MAX_ENGINES]
    per_day = {e: d.per_day[e] for e in shown}
    if len(engines) > MAX_ENGINES:
        per_day["other"] = [sum(d.per_day[e][i] for e in engines[MAX_ENGINES:]) for i in range(len(d.days))]
    return {
        "days": [day.isoformat() for day in d.days],
        "incidents_per_day": per_day,
        "top_signatures": {f"{g.signature_id} · {g.engine}": g.incidents for g in d.top_signatures},
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
        "colors": {**engine_colors(engines), **({"other": OTHER} if len(engines) > MAX_ENGINES else {})},
    }


def _min(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 60.0, 2)


def render_png(d: Digest, dpi: int = 100) -> bytes:
    s = series(d)
    fig = Figure(figsize=(13, 11), dpi=dpi, layout="constrained")
    axes = fig.subplots(3, 2)
    start = d.days[0].isoformat() if d.days else ""
    end = d.days[-1].isoformat() if d.days else ""
    fig.suptitle(f"Incidents {start} – {end} ({d.timezone})", fontsize=14)

    ax = axes[0][0]
    labels = [day.strftime("%a %d") for day in d.days]
    bottom = [0] * len(labels)
    for engine, values in s["incidents_per_day"].items():
        ax.bar(labels, values, bottom=bottom, label=engine, color=s["colors"].get(engine, OTHER))
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_title("Incidents per day by engine")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if s["incidents_per_day"]:
        ax.set_ylim(0, max(bottom) * 1.3 + 0.5)  # head room for the legend
        ax.legend(fontsize=8, loc="upper right", ncols=min(3, len(s["incidents_per_day"])))
    else:
        _empty(ax)

    ax = axes[0][1]
    top = s["top_signatures"]
    if top:
        names = list(top)[::-1]
        ax.barh(names, [top[n] for n in names], color=THIS_WEEK)
        ax.tick_params(axis="y", labelsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        _empty(ax)
    ax.set_title("Top signatures (incidents)")

    ax = axes[1][0]
    x = [0, 1]
    ax.bar(
        [i - 0.2 for i in x],
        s["new_vs_recurring"]["previous"],
        width=0.4,
        label="previous week",
        color=LAST_WEEK,
    )
    ax.bar([i + 0.2 for i in x], s["new_vs_recurring"]["this"], width=0.4, label="this week", color=THIS_WEEK)
    ax.set_xticks(x, ["new", "recurring"])
    ax.set_title("New vs recurring incidents")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)

    ax = axes[1][1]
    times = s["mtta_mttr_minutes"]
    if times:
        names = list(times)[::-1]
        y = list(range(len(names)))
        ax.barh(
            [i + 0.2 for i in y], [times[n][0] or 0 for n in names], height=0.4, label="MTTA", color="#ff7f0e"
        )
        ax.barh(
            [i - 0.2 for i in y], [times[n][1] or 0 for n in names], height=0.4, label="MTTR", color="#2ca02c"
        )
        ax.set_yticks(y, names, fontsize=8)
        ax.set_xlabel("minutes")
        ax.legend(fontsize=8)
    else:
        _empty(ax)
    ax.set_title("MTTA / MTTR per signature")

    ax = axes[2][0]
    trend = s["trend"]
    x = list(range(len(trend)))
    ax.bar(
        [i - 0.2 for i in x],
        [v[0] for v in trend.values()],
        width=0.4,
        label="previous week",
        color=LAST_WEEK,
    )
    ax.bar(
        [i + 0.2 for i in x], [v[1] for v in trend.values()], width=0.4, label="this week", color=THIS_WEEK
    )
    ax.set_xticks(x, list(trend))
    ax.set_title("Trend against the previous week")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)

    ax = axes[2][1]
    uptime = {k: v for k, v in s["uptime_percent"].items() if v is not None}
    if uptime:
        names = list(uptime)[::-1]
        bars = ax.barh(
            names, [uptime[n] for n in names], color=[s["colors"].get(n, "#2ca02c") for n in names]
        )
        ax.bar_label(
            bars, labels=[f"{uptime[n]:.2f}%" for n in names], label_type="center", color="white", fontsize=8
        )
        ax.set_xlim(min(90.0, min(uptime.values()) - 1), 100)
        ax.set_xlabel("% of checks serving")
        ax.tick_params(axis="y", labelsize=8)
    else:
        _empty(ax)
    ax.set_title("Uptime per engine (from the checks)")

    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"triage-digest": json.dumps(s, sort_keys=True)})
    return buf.getvalue()


def _empty(ax: Any) -> None:
    ax.text(0.5, 0.5, "nothing this week", ha="center", va="center", transform=ax.transAxes, color="#888888")
    ax.set_xticks([])
    ax.set_yticks([])
