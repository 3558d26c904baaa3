"""`triage-bot check`: one health-check pass over engines.yaml, printed per engine.

Each engine's state is judged on this pass alone (no hysteresis: that is for the scheduler), so
states that need a rate (a flat generation counter, preemptions per minute, failure rate) need
`--samples 2` or more. Nothing is recorded and nothing is posted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from triage_bot.health.monitor import EngineStatus


@click.command()
@click.option(
    "--engines",
    "engines_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="engines.yaml (default: $TRIAGE_ENGINES, then ./engines.yaml).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per engine.")
@click.option(
    "--samples",
    type=click.IntRange(1, 10),
    default=1,
    show_default=True,
    help="Passes to run; rates (stuck, preemptions, failures) need at least 2.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 60),
    default=2.0,
    show_default=True,
    help="Seconds between passes when --samples > 1.",
)
def check(engines_path: str | None, as_json: bool, samples: int, interval: float) -> None:
    """Check every engine once and print its state (up, degraded or down).

    Exit status: 0 when every engine is up, 1 when any is degraded or down (usable in scripts),
    2 when engines.yaml cannot be used.
    """
    from triage_bot.health.config import ConfigError, load_engines
    from triage_bot.health.monitor import HealthMonitor

    try:
        config = load_engines(engines_path)
    except ConfigError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)

    async def run() -> list[EngineStatus]:
        monitor = HealthMonitor(config)
        try:
            statuses = []
            for i in range(samples):
                if i:
                    await asyncio.sleep(interval)
                statuses = await monitor.run_once()
            return statuses
        finally:
            await monitor.poller.aclose()

    statuses = asyncio.run(run())
    healthy = all(s.state == "up" for s in statuses)
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in statuses], indent=2, default=str))
        sys.exit(0 if healthy else 1)
    colors = {"up": "green", "degraded": "yellow", "down": "red"}
    for s in statuses:
        obs = s.observation
        head = f"{s.name:<24} {s.kind:<7} " + click.style(f"{s.state:<9}", fg=colors.get(s.state))
        click.echo(f"{head} {obs.elapsed_s * 1000:7.0f} ms  {obs.detail}")
        for message in s.findings.values():
            click.echo(f"    - {message}")
    sys.exit(0 if healthy else 1)
