"""Run the Alembic migrations from code: `triage-bot db upgrade`, the bot at start, the CLI's first record."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

# package data, so a wheel install migrates like a checkout (installed wheels are unpacked on disk,
# which is what Alembic needs: it imports env.py and the versions by path)
MIGRATIONS = Path(str(files("triage_bot") / "migrations"))


def alembic_config(url: str) -> Any:  # alembic.config.Config, imported lazily: Alembic is slow to import
    """An Alembic config that needs no alembic.ini in the working directory."""
    from alembic.config import Config

    if not (MIGRATIONS / "env.py").is_file():
        raise FileNotFoundError(f"migrations not found at {MIGRATIONS}")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at `url` to `revision` (idempotent; a no-op when already there)."""
    from alembic import command

    from triage_bot.history.db import normalize_url

    command.upgrade(alembic_config(normalize_url(url)), revision)
