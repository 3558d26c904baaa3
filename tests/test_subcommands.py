"""The /triage subcommands' decisions, without Slack (triage_bot/subcommands.py): what the
arguments mean, and what a surface is told when the history is missing, away or refuses."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from rich.console import Console

from tests.support.schema import create_every_table
from triage_bot import subcommands
from triage_bot.console import handle
from triage_bot.core import default_triager
from triage_bot.history import HistoryStore, Sighting

KB = default_triager().kb


@pytest.fixture
def store(tmp_path: Path) -> HistoryStore:
    history = HistoryStore.from_url(f"sqlite:///{tmp_path / 'h.sqlite3'}")
    create_every_table(history.session_factory.kw["bind"])
    return history


def test_durations_and_numbers_are_read_strictly() -> None:
    assert subcommands.parse_duration("2h") == timedelta(hours=2)
    assert subcommands.parse_duration("1.5 d") == timedelta(days=1.5)
    assert [subcommands.parse_duration(t) for t in ("0m", "400d", "soon", "2x")] == [None] * 4
    assert [subcommands.parse_number(t) for t in ("42", "#7", "4 2", "-1", "")] == [42, 7, None, None, None]


def test_history_arguments(store: HistoryStore) -> None:
    store.record(Sighting("vllm.kv_cache_no_memory", "vllm", "C1"))
    found = subcommands.incidents(store, KB, "30d vllm")
    assert isinstance(found, subcommands.Incidents)
    assert (found.engine, found.days, [i.signature_id for i in found.rows]) == (
        "vllm",
        30.0,
        ["vllm.kv_cache_no_memory"],
    )
    typo = subcommands.incidents(store, KB, "vlm")
    assert isinstance(typo, subcommands.Outcome) and typo.kind == "unknown_engine"
    assert {"vllm", "sglang", "trtllm", "triton", "generic"} <= set(typo.known)  # engines, probes, generic
    assert subcommands.incidents(store, KB, "0d") == subcommands.Outcome("bad_days")
    assert subcommands.incidents(None, KB, "") == subcommands.Outcome("no_history")


def test_resolve_says_what_happened(store: HistoryStore) -> None:
    incident = store.record(Sighting("vllm.kv_cache_no_memory", "vllm", "C1")).incident_id
    assert subcommands.resolve(store, "resolve?", "U1").kind == "usage"
    assert subcommands.resolve(store, "#999", "U1") == subcommands.Outcome("not_found", 999)
    assert subcommands.resolve(
        store, f"#{incident} restarted with --enforce-eager", "U1"
    ) == subcommands.Outcome("done", incident, detail="restarted with --enforce-eager")
    assert subcommands.resolve(store, str(incident), "U1") == subcommands.Outcome("already", incident)


def test_mute_targets_a_known_signature_or_an_engine(store: HistoryStore) -> None:
    done, target = subcommands.mute(store, KB, "vllm.kv_cache_no_memory 2h", "U1")
    assert done.kind == "done" and target == subcommands.MuteTarget(
        "vllm.kv_cache_no_memory", None, timedelta(hours=2)
    )
    done, target = subcommands.mute(store, KB, "SGLang 1d", "U1")
    assert done.kind == "done" and target is not None and target.engine == "sglang"
    assert subcommands.mute(store, KB, "vllm.no_such_thing 2h", "U1")[0].kind == "unknown_signature"
    assert subcommands.mute(store, KB, "vllm forever", "U1")[0].kind == "bad_duration"
    mutes = subcommands.mutes(store)
    assert isinstance(mutes, list) and len(mutes) == 2
    assert subcommands.unmute(store, f"#{mutes[0].id}").kind == "done"
    assert subcommands.unmute(store, f"#{mutes[0].id}").kind == "already"
    assert subcommands.unmute(store, "#999").kind == "already"  # an unknown number is not in force either


def test_a_database_that_does_not_answer_is_unavailable_not_an_exception(tmp_path: Path) -> None:
    away = HistoryStore.from_url(f"sqlite:///{tmp_path / 'missing' / 'no.sqlite3'}")  # cannot be opened
    assert subcommands.incidents(away, KB, "").kind == "unavailable"  # type: ignore[union-attr]
    assert subcommands.resolve(away, "1", "U1").kind == "unavailable"


def test_the_console_answers_the_read_only_subcommands_the_same_way(store: HistoryStore) -> None:
    store.record(Sighting("vllm.kv_cache_no_memory", "vllm", "C1"))
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    for line in (
        "help",
        "/triage history vllm 30",
        "/triage history vlm",
        "/triage search kv cache",
        "/triage mutes",
    ):
        assert handle(default_triager(), line, console, store)
    text = out.getvalue()
    assert text.startswith("Paste an engine error")  # a bare `help` is the help, not a paste
    assert "vllm.kv_cache_no_memory · vllm · open · 1×" in text
    assert "No engine 'vlm'; use one of" in text
    assert "No mutes in force" in text
