"""Fixtures for the health tests: fake engines and a SQLite history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from triage_bot.history import HistoryStore
from triage_bot.history.db import make_engine, make_session_factory
from triage_bot.history.models import Base
from triage_bot.testing.fake_engines import FakeEngines


@pytest.fixture
def fakes() -> Iterator[FakeEngines]:
    with FakeEngines() as f:
        yield f


@pytest.fixture
def store(tmp_path: Path) -> HistoryStore:
    engine = make_engine(f"sqlite:///{tmp_path / 'history.sqlite3'}")
    Base.metadata.create_all(engine)
    return HistoryStore(make_session_factory(engine))
