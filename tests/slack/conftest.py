"""A real Slack app against a local Slack: the stand-in, a SQLite history, waitress on a free port.

Nothing of the bot is mocked: requests are signed and sent over HTTP into the same server
`triage-bot serve --http` runs, and every Web API call the bot makes lands in the stand-in, where
tests read the exact payloads. `env.settle()` waits for the work after each ack to finish (the
app's executor is idle), so an assertion that nothing was posted is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.knowledge import write_kb
from tests.support.slack_env import Env, make_history, start_env, stop_env
from triage_bot.core import Triager
from triage_bot.history import HistoryStore
from triage_bot.testing.slack_standin import SlackStandin


@pytest.fixture(scope="session")
def triager(tmp_path_factory: pytest.TempPathFactory) -> Triager:
    return Triager.from_directory(write_kb(tmp_path_factory.mktemp("kb")))


@pytest.fixture
def slack() -> Iterator[SlackStandin]:
    with SlackStandin() as standin:
        yield standin


@pytest.fixture
def history(tmp_path: Path) -> HistoryStore:
    return make_history(tmp_path / "history.sqlite3")


@pytest.fixture
def make_env(slack: SlackStandin, triager: Triager, history: HistoryStore) -> Iterator[Callable[..., Env]]:
    started: list[Env] = []

    def factory(**overrides: Any) -> Env:
        env = start_env(slack, triager, history, **overrides)
        started.append(env)
        return env

    yield factory
    for env in started:
        stop_env(env)


@pytest.fixture
def env(make_env: Callable[..., Env]) -> Env:
    return make_env()
