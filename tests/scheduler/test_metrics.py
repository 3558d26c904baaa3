"""The scheduler in the bot's metrics: whether this replica leads."""

from __future__ import annotations

from tests.support.metrics import scrape, value
from triage_bot.scheduler import LocalCoordinator


def test_scheduler_leadership_is_a_gauge(tmp_path) -> None:
    coordinator = LocalCoordinator(tmp_path / "history.sqlite3.scheduler.lock", poll_s=0.1)
    coordinator.start()
    try:
        assert coordinator.is_leader() and value(scrape(), "triage_scheduler_leader") == 1
    finally:
        coordinator.stop()
    assert value(scrape(), "triage_scheduler_leader") == 0
