"""Run the Alembic migrations from code: `triage-bot db upgrade`, the bot at start, the CLI's first record."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from triage_bot.history.store import HistoryStore

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


_REVISION = re.compile(r"^(down_revision|revision)\b[^=\n]*=\s*(?:None|[\"']([\w-]+)[\"'])", re.M)


def head_revision() -> str | None:
    """The newest migration, read from the files' `revision` and `down_revision` lines without
    importing Alembic (0.35-0.45 s): the revision that no other revises. A test holds it to
    Alembic's own answer."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        for kind, value in _REVISION.findall(path.read_text(encoding="utf-8")):
            if value:
                (revisions if kind == "revision" else revised).add(value)
    heads = revisions - revised
    return heads.pop() if len(heads) == 1 else None


def current_revision(url: str) -> str | None:
    """The revision the database at `url` is at (None: never migrated, or unreadable)."""
    from sqlalchemy import text

    from triage_bot.history.db import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except Exception:
        return None
    finally:
        engine.dispose()


def ensure_upgraded(url: str) -> None:
    """Upgrade only when the database is behind: a CLI call that records an answer checks one row
    instead of running Alembic every time."""
    head = head_revision()
    if head is None or current_revision(url) != head:
        upgrade(url)


def open_upgraded_store() -> HistoryStore:
    """The history on DATABASE_URL for a command-line surface (the CLI, the console): upgraded
    first when this process finds it behind, such as a SQLite file it has just created."""
    from triage_bot.history.store import open_store
    from triage_bot.settings import Settings

    ensure_upgraded(Settings.from_env().database_url)
    return open_store()
