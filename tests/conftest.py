"""Shared fixtures: a tiny knowledge base written to a temp dir, and the shared corpus location."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.knowledge import CORPUS, write_kb

# Property tests draw the same examples on every run (derandomize), keep no example database in the
# checkout, and have no per-example deadline: a loaded CI machine must not turn a slow example into
# a failure. Set HYPOTHESIS_PROFILE=explore to search with fresh random examples instead.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", database=None, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# The bot's local state defaults to the user's data directory; tests (and the processes they start,
# which inherit this) keep theirs in a temporary one instead of the home directory.
os.environ.setdefault("TRIAGE_DATA_DIR", tempfile.mkdtemp(prefix="triage-bot-tests-"))
os.environ.setdefault("TRIAGE_CACHE_DIR", tempfile.mkdtemp(prefix="triage-bot-cache-"))

pytest_plugins = ["tests.support.own_postgres", "tests.support.postgres_schema"]  # own_postgres, pg_schema


@pytest.fixture
def mini_kb_dir(tmp_path: Path) -> Path:
    return write_kb(tmp_path / "kb")


@pytest.fixture
def corpus() -> Path:
    if not (CORPUS / "errors.jsonl").exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS
