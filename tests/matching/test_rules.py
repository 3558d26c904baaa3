"""Each ranking rule on its own: built `Found` sets, no knowledge base, no paste."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from triage_bot.cli.main import cli
from triage_bot.kb.schema import Signature
from triage_bot.matching import rules
from triage_bot.matching.rules import Found, decide
from triage_bot.matching.scored import How, Scored

PROTOCOL = {"confirm": ["c"], "collect": ["c"], "workarounds": ["w"], "report": {"default": "r"}}


def sig(sig_id: str, *, engine: str = "any", wrapper: bool = False, priority: int = 0) -> Signature:
    fields: dict = {
        "id": sig_id,
        "engine": engine,
        "title": sig_id,
        "severity": "high",
        "wrapper": wrapper,
        "priority": priority,
        "examples": ["a", "b"],
        "cause": "x" * 20,
        "recovery": "r",
        "faq": "y" * 20,
    }
    if sig_id.split(".")[0] in ("component", "fallback", "client", "install"):
        fields |= {"evidence": [{"pattern": "x"}], "protocol": PROTOCOL}
    else:
        fields |= {"patterns": ["x"], "messages": ["x"]}
        if sig_id.startswith("generic."):
            fields["recovery"] = {"vllm": "r", "sglang": "r", "trtllm": "r", "default": "r"}
    return Signature.model_validate(fields)


def scored(signature: Signature, how: How = "pattern", confidence: float = 0.9) -> Scored:
    return Scored(signature, how, confidence, None)


OOM = scored(sig("generic.cuda_oom"))
SGLANG_OOM = scored(sig("sglang.prefill_out_of_memory", engine="sglang"))
CONTEXT = scored(sig("vllm.kv_cache_no_memory", engine="vllm"), "context", 0.72)
DEAD = scored(sig("vllm.engine_core_dead", engine="vllm", wrapper=True), "wrapper", 0.84)
LORA = scored(sig("component.lora"), "evidence", 0.85)
CLIENT = scored(sig("client.request_rejected", priority=-10), "evidence", 0.85)
FALLBACK = scored(sig("fallback.unexplained_crash", priority=-50), "evidence", 0.7)
LORA_GUESS = scored(sig("component.lora"), "evidence", 0.6)
FUZZY = scored(sig("vllm.prompt_too_long", engine="vllm"), "fuzzy", 0.5)
FUZZY_WRAPPER = scored(sig("vllm.engine_core_dead", engine="vllm", wrapper=True), "fuzzy", 0.7)


def answer(found: Found) -> tuple[str | None, str | None, list[str]]:
    decision = decide(found)
    if decision is None:
        return None, None, []
    return decision.primary.sig.id, decision.rule, [o.sig.id for o in decision.others]


def test_a_cause_in_its_own_words_beats_wrappers_families_and_resemblances() -> None:
    found = Found("vllm", specific=[OOM], wrappers=[DEAD], families=[LORA], fuzzy=[FUZZY])
    assert answer(found) == ("generic.cuda_oom", "cause_stated_in_its_own_words", [])


def test_other_specific_failures_are_listed_with_the_cause() -> None:
    found = Found("vllm", specific=[OOM, CONTEXT])
    assert answer(found)[2] == ["vllm.kv_cache_no_memory"]


def test_an_area_beats_another_engines_failure() -> None:
    found = Found("vllm", specific=[SGLANG_OOM], families=[LORA])
    assert answer(found) == (
        "component.lora",
        "area_over_mismatched_specific",
        ["sglang.prefill_out_of_memory"],
    )


def test_an_area_beats_a_failure_inferred_from_context() -> None:
    found = Found("vllm", specific=[CONTEXT], families=[LORA])
    assert answer(found)[:2] == ("component.lora", "area_over_mismatched_specific")


def test_a_symptom_family_does_not_beat_a_mismatched_specific() -> None:
    found = Found("vllm", specific=[SGLANG_OOM], families=[CLIENT])
    assert answer(found)[:2] == ("sglang.prefill_out_of_memory", "specific_even_if_mismatched")


def test_an_area_beats_a_wrapper_which_is_listed() -> None:
    found = Found("vllm", wrappers=[DEAD], families=[LORA])
    assert answer(found) == ("component.lora", "area_over_wrapper", ["vllm.engine_core_dead"])


def test_a_wrapper_alone_asks_for_the_cause_and_beats_a_symptom() -> None:
    found = Found("vllm", wrappers=[DEAD], families=[CLIENT])
    decision = decide(found)
    assert decision is not None and decision.rule == "wrapper_asks_for_the_cause" and decision.incomplete


def test_an_area_one_clue_short_beats_the_last_resort() -> None:
    found = Found("vllm", families=[FALLBACK], guesses=[LORA_GUESS])
    assert answer(found)[:2] == ("component.lora", "area_guess_over_last_resort")


def test_the_last_resort_answers_when_no_area_is_in_sight() -> None:
    assert answer(Found("vllm", families=[FALLBACK]))[:2] == (
        "fallback.unexplained_crash",
        "recognised_family",
    )


def test_a_recognised_family_beats_a_resemblance() -> None:
    assert answer(Found(None, families=[CLIENT], fuzzy=[FUZZY]))[:2] == (
        "client.request_rejected",
        "recognised_family",
    )


def test_a_resemblance_answers_only_above_the_floor_and_never_for_a_wrapper() -> None:
    assert answer(Found(None, fuzzy=[FUZZY]))[:2] == ("vllm.prompt_too_long", "close_resemblance")
    faint = scored(FUZZY.sig, "fuzzy", rules.EXPLICIT_FLOOR - 0.01)
    assert answer(Found(None, fuzzy=[faint])) == (None, None, [])
    assert answer(Found(None, fuzzy=[FUZZY_WRAPPER], guesses=[LORA_GUESS]))[:2] == (
        "component.lora",
        "family_guess",
    )


def test_nothing_found_is_no_answer() -> None:
    assert decide(Found(None)) is None


def test_family_admission_thresholds_and_the_engine_for_the_last_resort() -> None:
    assert rules.family_admission(LORA.sig, 1.0, None) == "recognised"
    assert rules.family_admission(LORA.sig, 0.5, None) == "guess"
    assert rules.family_admission(LORA.sig, 0.49, "vllm") is None
    assert rules.family_admission(FALLBACK.sig, 2.0, None) is None  # an app's own traceback is not ours
    assert rules.family_admission(FALLBACK.sig, 2.0, "sglang") == "recognised"


def test_evidence_that_only_describes_the_set_up_is_at_most_a_guess() -> None:
    """Multi-node flags and a Ray cluster weigh in, but are no failure of their own."""
    assert rules.family_admission(LORA.sig, 3.0, "vllm", settings_only=True) == "guess"
    assert rules.family_admission(LORA.sig, 3.0, "vllm", True, shows_failure=lambda: False) is None
    assert rules.family_admission(LORA.sig, 0.4, "vllm", True) is None


def test_bands_order_areas_symptoms_and_the_last_resort() -> None:
    assert (
        rules.family_rank(LORA.sig, 1.0)
        > rules.family_rank(CLIENT.sig, 5.0)
        > rules.family_rank(FALLBACK.sig, 9.0)
    )


def test_specific_rank_orders_fit_then_own_words_then_priority_then_length_then_position() -> None:
    rank = rules.specific_rank
    assert rank(OOM.sig, -1, True, 99, 0) < rank(OOM.sig, 0, False, 1, 9)  # another engine's ranks last
    assert rank(OOM.sig, 1, False, 99, 0) < rank(OOM.sig, 1, True, 1, 9)  # own words over context
    assert rank(OOM.sig, 1, True, 10, 5) < rank(OOM.sig, 1, True, 20, 5)  # longer match
    assert rank(OOM.sig, 1, True, 10, 5) < rank(OOM.sig, 1, True, 10, 1)  # earlier line


def test_engine_fit() -> None:
    assert rules.engine_fit(SGLANG_OOM.sig, "sglang") == 1
    assert rules.engine_fit(SGLANG_OOM.sig, "vllm") == -1
    assert rules.engine_fit(SGLANG_OOM.sig, None) == 0
    assert rules.engine_fit(OOM.sig, "vllm") == 1 and rules.engine_fit(OOM.sig, None) == 0


def test_every_rule_is_in_the_docs_as_kb_rules_prints_it() -> None:
    printed = CliRunner().invoke(cli, ["kb", "rules"]).output
    docs = (Path(__file__).resolve().parents[2] / "docs" / "knowledge-base.md").read_text()
    block = re.search(r"<!-- rules:start -->\n(.*?)<!-- rules:end -->", docs, re.S)
    assert block is not None and block.group(1) == printed, (
        "run `triage-bot kb rules --update docs/knowledge-base.md`"
    )
    for rule in rules.RULES:
        assert f"`{rule.__name__}`" in printed and rule.__doc__
