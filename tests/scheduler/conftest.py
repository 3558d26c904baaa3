"""Fixtures for the scheduler tests: fake engines for the scheduler the bot builds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from triage_bot.testing.fake_engines import FakeEngines


@pytest.fixture
def fakes() -> Iterator[FakeEngines]:
    with FakeEngines() as f:
        yield f
