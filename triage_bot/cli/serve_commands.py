"""`triage-bot serve`: the bot. Socket Mode when SLACK_APP_TOKEN is set, HTTP mode with `--http`,
and with no Slack credentials a local console that gives the same answers.

The console is the first-minute experience (`make run` before any Slack setup), so it stays the
default whenever no bot token is configured. On SIGTERM (docker stop, a rolling deploy) the bot
stops taking new requests, finishes the work it already acked, and exits.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import Any

import click


def _terminate(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _migrate() -> None:
    """Bring DATABASE_URL's schema up to date (idempotent); the history is optional, so failures only warn."""
    try:
        from alembic import command

        from triage_bot.cli.db_commands import _url
        from triage_bot.history.migrate import alembic_config

        command.upgrade(alembic_config(_url(None)), "head")
    except Exception as exc:
        click.echo(
            f"warning: could not migrate the database ({exc}); the history may be unavailable", err=True
        )


def _start_scheduler(bot: Any) -> object | None:
    """Health checks, the weekly digest and pruning (triage_bot/scheduler/), next to the Slack app; once per
    slot across replicas. Alerts and the digest go through the app's own delivery path (outbox,
    retries, pacing). A scheduler that cannot start is logged, and the bot still answers Slack."""
    try:
        from triage_bot.scheduler import build_scheduler
        from triage_bot.slack.outputs import scheduler_outputs

        scheduler = build_scheduler(
            outputs=lambda store: scheduler_outputs(delivery=bot.delivery, store=store)
        )
        scheduler.start()
        return scheduler
    except Exception as exc:
        logging.getLogger(__name__).error("the scheduler did not start (%s): no health checks or digest", exc)
        return None


def _warm_in_background() -> Callable[[], None]:
    """Compile the knowledge base's patterns while the first connection is made (about 1 s).

    Returns what stops it. The thread is not a daemon: one frozen inside RE2 while the interpreter
    exits aborts the process ("terminate called without an active exception").
    """
    import threading

    from triage_bot.core import default_triager

    stop = threading.Event()
    thread = threading.Thread(target=default_triager().warm, kwargs={"stop": stop}, name="triage-warm")
    thread.start()

    def stopped() -> None:
        stop.set()
        thread.join(timeout=10)

    return stopped


@click.command()
@click.option(
    "--http", "http_mode", is_flag=True, help="Serve Slack's HTTP endpoints (/slack/events, /healthz)."
)
@click.option(
    "--port",
    default=3000,
    show_default=True,
    envvar="PORT",
    help="Port for --http (in Socket Mode: the probes' port).",
)
@click.option("--host", default="0.0.0.0", show_default=True, help="Address for --http and the probes.")
@click.option(
    "--console", "force_console", is_flag=True, help="Open the local console even if Slack is configured."
)
@click.option(
    "--migrate/--no-migrate",
    default=True,
    show_default=True,
    help="Run the database migrations before starting (skip when a deploy job runs them).",
)
@click.option(
    "--probes/--no-probes",
    default=True,
    show_default=True,
    help="In Socket Mode, serve /healthz and /readyz on --host/--port too.",
)
@click.option(
    "--scheduler/--no-scheduler",
    "with_scheduler",
    default=True,
    show_default=True,
    help="Run the scheduled jobs (health checks, weekly digest, pruning) in this process.",
)
def serve(
    http_mode: bool,
    port: int,
    host: str,
    force_console: bool,
    migrate: bool,
    probes: bool,
    with_scheduler: bool,
) -> None:
    """Run the bot: Slack (Socket Mode, or HTTP with --http), or a local console without Slack credentials."""
    from triage_bot.slack.config import SlackConfig, SlackConfigError

    try:
        config = SlackConfig.from_env()
    except SlackConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if force_console or (not config.has_slack and not http_mode):
        from triage_bot.console import run_console

        run_console()
        return
    if not config.has_slack:
        raise click.ClickException(
            "--http needs SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (see docs/slack-setup.md)"
        )
    if not http_mode and not config.app_token:
        raise click.ClickException(
            "SLACK_BOT_TOKEN is set but SLACK_APP_TOKEN is not: set SLACK_APP_TOKEN for Socket Mode, "
            "or run `triage-bot serve --http --port 3000` with SLACK_SIGNING_SECRET (see docs/slack-setup.md)"
        )
    from triage_bot import log_redaction
    from triage_bot.settings import SettingsError

    try:
        log_redaction.configure()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    if migrate:
        _migrate()
    from triage_bot.slack.app import build

    try:
        bot = build(config, http=http_mode)
    except SlackConfigError as exc:
        raise click.ClickException(str(exc)) from None
    bot.start_sweepers()
    stop_warming = _warm_in_background()
    scheduler = _start_scheduler(bot) if with_scheduler else None
    if with_scheduler:
        from triage_bot.readiness import scheduler_check

        bot.readiness.add("scheduler", scheduler_check(scheduler))
    signal.signal(signal.SIGTERM, _terminate)
    try:
        if http_mode:
            from triage_bot.slack.http import HttpServer

            HttpServer(bot, host=host, port=port, threads=max(4, config.workers)).serve_forever()
        else:
            from triage_bot.slack.socket_mode import socket_mode_handler

            handler = socket_mode_handler(bot)
            probe_server = None
            if probes:  # liveness and readiness for an orchestrator, though Slack never calls in
                from triage_bot.slack.http import HttpServer

                probe_server = HttpServer(bot, host=host, port=port, threads=2, events=False).start()
                logging.getLogger(__name__).info(
                    "serving the probes on %s (/healthz, /readyz)", probe_server.url
                )
            try:
                click.echo("connecting to Slack in Socket Mode…", err=True)
                handler.start()  # type: ignore[no-untyped-call]  # bolt leaves these two unannotated
            finally:
                handler.close()  # type: ignore[no-untyped-call]
                if probe_server is not None:
                    probe_server.stop()
    except KeyboardInterrupt:
        pass  # SIGTERM or Ctrl-C (waitress handles it itself and returns)
    finally:
        click.echo("stopping: finishing the work in flight…", err=True)
        stop_warming()
        if scheduler is not None:
            scheduler.shutdown(wait=False)  # type: ignore[attr-defined]
        bot.close()
