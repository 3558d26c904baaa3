"""Run the Alembic migrations from code: `triage-bot db upgrade`, the bot at start, the CLI's first record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


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
