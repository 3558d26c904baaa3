"""`triage-bot serve`: the bot's main job. Until the Slack adapter lands, a local console."""

from __future__ import annotations

import os

import click


@click.command()
def serve() -> None:
    """Run the bot: an interactive console where a pasted error gets the bot's answer."""
    if os.environ.get("SLACK_BOT_TOKEN"):
        click.echo("Slack credentials are set, but this version has no Slack adapter yet: starting the console.",
                   err=True)
    from bot.console import run_console

    run_console()
