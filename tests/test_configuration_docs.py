"""docs/configuration.md documents every variable the one settings system reads, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from triage_bot.scheduler import SchedulerSettings
from triage_bot.settings import EnvSettings, Settings
from triage_bot.slack.config import SlackConfig

DOC = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text(encoding="utf-8")
CLASSES: tuple[type[EnvSettings], ...] = (Settings, SlackConfig, SchedulerSettings)
# the engines file's path, read where the file is loaded (triage_bot/health/config.py), and the
# knowledge cache and the extra knowledge directories, read before any settings (triage_bot/kb/)
OTHERS = {"TRIAGE_ENGINES", "TRIAGE_CACHE_DIR", "TRIAGE_KNOWLEDGE_PATH"}


def test_every_variable_is_documented() -> None:
    read = {name for cls in CLASSES for name in cls.variables()}
    assert len(read) >= 40  # the check means something: the three classes are all here
    missing = sorted(name for name in read | OTHERS if f"`{name}`" not in DOC)
    assert missing == []


def test_the_docs_name_no_variable_nothing_reads() -> None:
    read = {name for cls in CLASSES for name in cls.variables()} | OTHERS
    documented = set(re.findall(r"`((?:TRIAGE|SLACK)_[A-Z0-9_]+)`", DOC)) | (
        {"DATABASE_URL"} & set(DOC.split("`"))
    )
    assert sorted(documented - read) == []


def test_every_settings_class_is_one_of_the_documented_ones() -> None:
    """A new settings class must be added to CLASSES, so its variables are checked too."""
    import triage_bot.cli.main  # noqa: F401 - imports every part of the bot

    def subclasses(cls: type) -> set[type]:
        return {c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))}

    assert subclasses(EnvSettings) <= set(CLASSES)
