"""Slack settings from the environment, and `triage-bot serve` choosing the right mode."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from triage_bot.cli.main import cli
from triage_bot.slack.config import DEFAULT_API_URL, SlackConfig, SlackConfigError


def test_settings_from_the_environment() -> None:
    config = SlackConfig.from_env(
        {
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_APP_TOKEN": "xapp-1",
            "SLACK_API_URL": "http://proxy.local/api",
            "TRIAGE_ADMINS": "U1, U2;W3",
            "TRIAGE_FILE_MAX_BYTES": "1024",
            "TRIAGE_REPLY_TO_BOTS": "yes",
        }
    )
    assert config.socket_mode and config.has_slack
    assert config.api_url == "http://proxy.local/api/"  # slack_sdk joins method names onto it
    assert config.admins == {"U1", "U2", "W3"} and config.is_admin("W3") and not config.is_admin("U9")
    assert (config.file_max_bytes, config.reply_to_bots) == (1024, True)
    empty = SlackConfig.from_env({})
    assert (empty.has_slack, empty.api_url, empty.admins) == (False, DEFAULT_API_URL, frozenset())
    assert not empty.is_admin("") and not empty.is_admin(None)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SLACK_BOT_TOKEN": "not-a-token"}, "SLACK_BOT_TOKEN must be a bot token"),
        ({"SLACK_APP_TOKEN": "xoxb-wrong"}, "SLACK_APP_TOKEN must be an app-level token"),
        ({"SLACK_API_URL": "ftp://x"}, "SLACK_API_URL must be an http"),
        ({"TRIAGE_FILE_MAX_BYTES": "lots"}, "TRIAGE_FILE_MAX_BYTES='lots': Input should be a valid integer"),
        (
            {"TRIAGE_SLACK_WORKERS": "0"},
            "TRIAGE_SLACK_WORKERS='0': Input should be greater than or equal to 1",
        ),
        ({"TRIAGE_REPLY_TO_BOTS": "maybe"}, "TRIAGE_REPLY_TO_BOTS='maybe'"),
    ],
)
def test_bad_settings_fail_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SlackConfigError, match=message):
        SlackConfig.from_env(env)


def test_serve_explains_a_half_configured_slack(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    result = CliRunner().invoke(cli, ["serve", "--no-migrate"])
    assert result.exit_code != 0 and "SLACK_APP_TOKEN is not" in result.output
    monkeypatch.delenv("SLACK_BOT_TOKEN")
    result = CliRunner().invoke(cli, ["serve", "--http", "--no-migrate"])
    assert result.exit_code != 0 and "--http needs SLACK_BOT_TOKEN" in result.output


def test_a_dot_env_file_is_read_and_the_environment_wins(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("SLACK_BOT_TOKEN=xoxb-from-file\nexport TRIAGE_ADMINS='U1,U2'\n", encoding="utf-8")
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.setenv("TRIAGE_ADMINS", "U9")
    config = SlackConfig.from_env(env_file=dotenv)
    assert config.bot_token == "xoxb-from-file" and config.admins == {"U9"}


def test_an_unmigrated_database_is_named_at_start_not_patched(tmp_path, monkeypatch, caplog) -> None:
    """Alembic owns every shared table: the app creates none of them, and says what to run."""
    import logging

    from sqlalchemy import inspect

    from triage_bot.history import HistoryStore
    from triage_bot.history.models import Base
    from triage_bot.slack.app import build
    from triage_bot.testing.slack_standin import BOT_TOKEN, SIGNING_SECRET, SlackStandin

    monkeypatch.setenv("TRIAGE_DATA_DIR", str(tmp_path / "data"))
    history = HistoryStore.from_url(f"sqlite:///{tmp_path / 'h.sqlite3'}")
    engine = history.session_factory.kw["bind"]
    Base.metadata.create_all(engine)  # the history's tables, but not the Slack ones
    with SlackStandin() as slack:
        config = SlackConfig(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, api_url=slack.api_url)
        with caplog.at_level(logging.ERROR):
            bot = build(config, history=history, http=True)
        try:
            assert bot.deps.store is None and bot.deps.inbox is not None and bot.deps.inbox.shared is None
            assert "slack_outbox" not in inspect(engine).get_table_names()
            assert caplog.text.count("run `triage-bot db upgrade`") == 2  # the outbox and the shared inbox
        finally:
            bot.close()
