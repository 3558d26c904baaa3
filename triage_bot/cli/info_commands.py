"""`triage-bot info`: where everything is, so an operator never has to guess which file is in use.

It reads settings the way the bot does (environment over `.env`) and creates nothing: printing a
path must not be what brings a database or a directory into being.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import version
from pathlib import Path

import click

from triage_bot.redaction import redact


def facts() -> dict[str, str]:
    """Each location the bot would use now, with the database URL's password masked."""
    from triage_bot.health.config import DEFAULT_PATH
    from triage_bot.history.migrate import MIGRATIONS
    from triage_bot.kb.loader import DEFAULT_DIR
    from triage_bot.settings import Settings
    from triage_bot.slack.config import SlackConfig, SlackConfigError

    settings = Settings.from_env()
    try:
        slack = SlackConfig.from_env()
    except SlackConfigError as exc:  # info is what one runs to find out why the bot will not start
        slack = SlackConfig()
        slack_problem = str(exc)
    else:
        slack_problem = ""
    return {
        "version": version("triage-bot"),
        "package": str(Path(__file__).resolve().parents[1]),
        "knowledge": str(DEFAULT_DIR),
        "migrations": str(MIGRATIONS),
        "data_dir": str(settings.data_dir),
        "database": redact(settings.database_url),
        "spool": str(settings.spool_path),
        "local_inbox": str(slack.local_inbox_path(settings.spool_path)),
        "engines": os.environ.get("TRIAGE_ENGINES") or str(Path.cwd() / DEFAULT_PATH),
        "env_file": str(Path.cwd() / ".env") if Path(".env").is_file() else "(none)",
        "slack_mode": slack_problem
        or ("socket" if slack.socket_mode else "http" if slack.signing_secret else "not configured"),
    }


@click.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def info(as_json: bool) -> None:
    """Print the version and where the knowledge base, migrations, database and spool are."""
    found = facts()
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    width = max(map(len, found))
    for key, value in found.items():
        click.echo(f"{key:<{width}}  {value}")
