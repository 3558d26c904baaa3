"""`triage-bot db`: migrate the incident history database (DATABASE_URL) with Alembic."""

from __future__ import annotations

from collections.abc import Callable

import click

from triage_bot.history.migrate import alembic_config


def _url(url: str | None) -> str:
    from triage_bot.history.db import normalize_url
    from triage_bot.settings import Settings

    return normalize_url(url or Settings.from_env().database_url)


def _shown(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _run(action: Callable[[], object], url: str) -> None:
    from sqlalchemy.exc import OperationalError

    try:
        action()
    except OperationalError as error:
        raise click.ClickException(
            f"cannot reach {_shown(url)}: {str(error.orig).strip().splitlines()[0]}"
        ) from None


url_option = click.option(
    "--url",
    help="Database URL (default: DATABASE_URL, else a SQLite file in the data directory; see `triage-bot info`).",
)


@click.group()
def db() -> None:
    """Create and migrate the incident history database."""


@db.command()
@click.argument("revision", default="head")
@url_option
def upgrade(revision: str, url: str | None) -> None:
    """Migrate to REVISION (default: the latest)."""
    from alembic import command

    url = _url(url)
    _run(lambda: command.upgrade(alembic_config(url), revision), url)
    click.echo(f"{_shown(url)}: upgraded to {revision}")


@db.command()
@click.argument("revision")
@url_option
def downgrade(revision: str, url: str | None) -> None:
    """Migrate back to REVISION ('base' removes every table; '-1' undoes one step)."""
    from alembic import command

    url = _url(url)
    _run(lambda: command.downgrade(alembic_config(url), revision), url)
    click.echo(f"{_shown(url)}: downgraded to {revision}")


@db.command()
@url_option
def current(url: str | None) -> None:
    """Print the database's revision."""
    from alembic.runtime.migration import MigrationContext

    from triage_bot.history.db import make_engine

    url = _url(url)
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            revision = MigrationContext.configure(connection).get_current_revision()
    except Exception as error:
        raise click.ClickException(f"cannot read {_shown(url)}: {error}") from None
    finally:
        engine.dispose()
    click.echo(f"{_shown(url)}: {revision or 'empty (run: triage-bot db upgrade)'}")
