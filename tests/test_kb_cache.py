"""The validated knowledge base is read back from the cache, and only when it is current and safe."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from triage_bot.kb import cache
from triage_bot.kb.loader import DEFAULT_DIR, KnowledgeBaseError, load


@pytest.fixture
def knowledge(tmp_path: Path) -> Path:
    copy = tmp_path / "knowledge"
    shutil.copytree(DEFAULT_DIR, copy)
    return copy


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(directory))
    return directory


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the full validations that load() runs."""
    import triage_bot.kb.loader as loader

    calls: list[int] = []
    real = loader.collect_problems

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(loader, "collect_problems", counted)
    return calls


def test_a_second_load_reads_the_cache_and_an_edit_misses_it(
    knowledge: Path, where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds = _builds(monkeypatch)
    first = load(knowledge)
    second = load(knowledge)
    assert builds == [1]
    assert [s.id for s in second.signatures] == [s.id for s in first.signatures]
    assert second.needs  # what each pattern needs is read once and kept with it
    assert len(list(where.glob("kb-*.pickle"))) == 1
    assert where.stat().st_mode & 0o077 == 0

    faq = knowledge / "faq.yaml"
    faq.write_text(faq.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    load(knowledge)
    assert builds == [1, 1]
    assert len(list(where.glob("kb-*.pickle"))) == 1  # the stale file is replaced, not kept


def test_an_extra_knowledge_directory_is_part_of_the_key(
    where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = where.parent / "site"
    site.mkdir()
    (site / "disk.yaml").write_text(
        "signatures:\n"
        "  - id: generic.site_disk_full\n    engine: generic\n    title: Disk full on the model cache\n"
        "    severity: high\n    patterns: ['No space left on device']\n"
        '    messages: ["OSError: [Errno 28] No space left on device"]\n'
        '    examples: ["OSError: [Errno 28] No space left on device", "No space left on device"]\n'
        "    cause: The disk that holds the model cache is full.\n    recovery: '$ df -h'\n"
        "    faq: Free space on the model cache's disk.\n",
        encoding="utf-8",
    )
    builds = _builds(monkeypatch)
    assert "generic.site_disk_full" not in load().by_id
    monkeypatch.setenv("TRIAGE_KNOWLEDGE_PATH", str(site))
    assert "generic.site_disk_full" in load().by_id  # not the bundled knowledge base's cache entry
    assert builds == [1, 1]
    load()
    assert builds == [1, 1]  # then read back
    (site / "disk.yaml").write_text((site / "disk.yaml").read_text(encoding="utf-8") + "\n", encoding="utf-8")
    load()
    assert builds == [1, 1, 1]  # an edit in the extra directory misses it


def test_a_broken_knowledge_base_is_never_cached(knowledge: Path, where: Path) -> None:
    (knowledge / "vllm.yaml").write_text("signatures: [", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(KnowledgeBaseError):
            load(knowledge)
    assert not list(where.glob("kb-*.pickle"))


def test_a_cache_others_can_write_is_not_read(
    knowledge: Path, where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load(knowledge)
    builds = _builds(monkeypatch)
    os.chmod(where, 0o777)
    load(knowledge)
    assert builds == [1]
    os.chmod(where, 0o700)
    load(knowledge)
    assert builds == [1]  # private again: read


def test_a_torn_cache_file_is_rebuilt(knowledge: Path, where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load(knowledge)
    (file,) = where.glob("kb-*.pickle")
    file.write_bytes(file.read_bytes()[:100])
    builds = _builds(monkeypatch)
    assert load(knowledge).signatures
    assert builds == [1]
    assert load(knowledge).signatures and builds == [1]


def test_an_unwritable_cache_costs_nothing_but_time(
    knowledge: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(blocker / "cache"))
    assert load(knowledge).signatures
    assert cache.cache_dir() == blocker / "cache"
