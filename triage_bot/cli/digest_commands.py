"""`triage-bot digest`: build the weekly digest from the history; post it, or just show it."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import click


@click.command()
@click.option("--days", type=click.IntRange(1, 92), default=7, show_default=True, help="Whole days to cover.")
@click.option("--dry-run", is_flag=True, help="Build it without posting it.")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers and the Block Kit as JSON.")
@click.option(
    "--png",
    "png_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the chart to this PNG file.",
)
@click.option("--tz", "tz", default=None, help="Timezone of the days (default: $TRIAGE_TIMEZONE or UTC).")
@click.option(
    "--end",
    "end",
    default=None,
    help="The digest covers the whole local days before this ISO time's midnight (default: now, i.e. up to the end of yesterday, as the Monday digest does).",
)
def digest(
    days: int, dry_run: bool, as_json: bool, png_path: Path | None, tz: str | None, end: str | None
) -> None:
    """Build the digest for the last DAYS days (posts it to TRIAGE_DIGEST_CHANNEL without --dry-run)."""
    import os
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from triage_bot.digest import build_digest, digest_blocks, digest_text, render_png
    from triage_bot.history import StorageError, open_store

    tz = tz or os.environ.get("TRIAGE_TIMEZONE") or "UTC"
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(f"unknown timezone {tz!r}", param_hint="--tz") from None
    end_at = None
    if end:
        try:
            end_at = datetime.fromisoformat(end)
        except ValueError:
            raise click.BadParameter(f"not an ISO time: {end!r}", param_hint="--end") from None
    store = open_store()
    try:
        built = build_digest(store, end=end_at, days=days, tz=tz)
    except StorageError as exc:
        click.echo(f"error: the history is unavailable: {exc}", err=True)
        sys.exit(1)
    if png_path is not None:
        png_path.write_bytes(render_png(built))
    if not dry_run:
        from triage_bot.slack.client import web_client
        from triage_bot.slack.config import SlackConfig
        from triage_bot.slack.delivery import Delivery
        from triage_bot.slack.outputs import post_digest

        config = SlackConfig.from_env()
        if not (config.bot_token and config.digest_channel):
            click.echo(
                "error: posting needs SLACK_BOT_TOKEN and TRIAGE_DIGEST_CHANNEL (or use --dry-run)", err=True
            )
            sys.exit(2)
        result = post_digest(Delivery(config, None, web_client(config)), config.digest_channel, built, store)
        if result["ts"] is None:
            click.echo("error: Slack did not take the digest; try again later", err=True)
            sys.exit(1)
        click.echo(f"posted to {result['channel']} (ts {result['ts']})", err=True)
    if as_json:
        click.echo(
            json.dumps({"digest": built.to_json(), "blocks": digest_blocks(built)}, indent=2, default=str)
        )
    elif dry_run:
        from triage_bot.render.terminal import mrkdwn_to_text

        click.echo(mrkdwn_to_text(digest_text(built)))
        for block in digest_blocks(built):
            text = (block.get("text") or {}).get("text")
            if text:
                click.echo(mrkdwn_to_text(text))
        if png_path is not None:
            click.echo(f"chart: {png_path}")
