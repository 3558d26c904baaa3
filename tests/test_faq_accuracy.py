"""The FAQ search on real questions (gathered 2026-12-02 from the engines' trackers and forums as
they came, plus off-topic ones): which entry it gives, and whether it stays quiet when no entry
answers. `faq_test2/` was never tuned on; `faq/` (measured five times while the search was built,
so no longer an honest measure) and `faq_tune/` were. The floors sit just under the measured
values; issue 12's target is 0.9 and silence on every off-topic question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage_bot import faq
from triage_bot.core import default_triager

HOLDOUT = Path(__file__).parent / "holdout"


def answered(name: str) -> list[tuple[dict[str, str | None], str | None]]:
    kb = default_triager().kb
    path = HOLDOUT / name / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 60
    out = []
    for row in rows:
        hits = faq.search(kb, row["question"])
        out.append((row, hits[0].id if hits else None))
    return out


def shares(name: str) -> tuple[float, float]:
    """(right entry among questions that have one, silence among those that have none)."""
    rows = answered(name)
    with_entry = [(row, got) for row, got in rows if row["faq"]]
    without = [(row, got) for row, got in rows if not row["faq"]]
    right = sum(got == row["faq"] for row, got in with_entry) / len(with_entry)
    quiet = sum(got is None for _, got in without) / len(without)
    return right, quiet


def test_never_tuned_questions() -> None:
    """`faq_test2/` (95 questions, 20 with an entry: most real questions are about something no
    entry covers): measured 0.35 right and 44 of 75 quiet when gathered, 0.30 and 43 of 75 after the
    third round (tags and an engine filter, judged on `faq/` and `faq_tune/`): that round did not
    carry over."""
    right, quiet = shares("faq_test2")
    assert right >= 0.28, right
    assert quiet >= 0.55, quiet


@pytest.mark.parametrize(
    ("name", "floor_right", "floor_quiet"), [("faq_tune", 0.86, 0.52), ("faq", 0.80, 0.68)]
)
def test_the_tuning_questions_do_not_regress(name: str, floor_right: float, floor_quiet: float) -> None:
    """`faq_tune/`: 0.14 and 15 of 26 quiet before the first round, 0.52 and 17 of 26 after; 0.78
    and 15 of 26 after the second (words no entry holds no longer drown the telling ones, so more
    questions get an answer, a few of them off-scope ones); 0.84 once entries name their failures;
    0.86 after the third. `faq/`: 0.600 and 26 of 36 before the third round, 0.745 and 26 of 36 after.
    Fourth round (2026-12-03): seven entries for the features most unanswered questions asked about
    (data parallelism, choosing a GPU, quantized models, LoRA, tool calling, structured output,
    speculative decoding) and a multi-word tag written as such counting for more; 14 `faq/`
    questions those entries answer were relabelled (was: none). `faq_tune/` 0.88 and 14 of 26
    quiet; `faq/` 0.824 and 16 of 23 quiet."""
    right, quiet = shares(name)
    assert right >= floor_right, right
    assert quiet >= floor_quiet, quiet


def test_a_question_about_an_engine_the_faq_does_not_cover_gets_no_answer() -> None:
    kb = default_triager().kb
    assert faq.search(kb, "how do I raise the KV cache size in vLLM?")
    assert faq.search(kb, "how do I raise the KV cache size in lmdeploy?") == []
    assert faq.search(kb, "Ollama runs out of GPU memory on a 7B model") == []
    assert (
        faq.search(kb, "vllm 的 kv cache 长度限制，lmdeploy也会有这种情况吗？") == []
    )  # CJK around the name


def test_words_no_entry_holds_do_not_drown_the_telling_one() -> None:
    """A long report around one FAQ concept (here an Xid) still finds its entry."""
    kb = default_triager().kb
    question = "Random Xid 79 with zero precursor at any load level, instant GPU death on driver 595.71.05"
    assert faq.search(kb, question)[0].id == "xid_errors"


def test_a_question_quoting_a_failure_gets_the_entry_that_explains_it() -> None:
    """faq.yaml's `signatures:` say which failures an entry explains; quoting one's message finds it."""
    kb = default_triager().kb
    warning = (
        "WARNING 05-01 scheduler.py:1000 Sequence group 7 is preempted by PreemptionMode.RECOMPUTE mode "
        "because there is not enough KV cache space. how bad is this?"
    )
    assert faq.search(kb, warning)[0].id == "vllm_preemption"


def test_an_entry_naming_a_failure_that_does_not_exist_is_refused(tmp_path) -> None:
    from tests.support.knowledge import MINI_FAQ, write_kb
    from triage_bot.kb.loader import collect_problems

    broken = MINI_FAQ.replace(
        "    answer: The fraction",
        "    signatures: [vllm.no_such_failure]\n    answer: The fraction",
    )
    assert broken != MINI_FAQ
    kb, problems = collect_problems(write_kb(tmp_path, **{"faq.yaml": broken}), ())
    assert kb is None
    assert any("vllm.no_such_failure" in p.message for p in problems)


def test_an_entry_about_one_engine_does_not_answer_a_question_about_another() -> None:
    kb = default_triager().kb
    trtllm = faq.search(kb, "Do I have to rebuild the TensorRT-LLM engine to run it on a different GPU?")
    assert trtllm and trtllm[0].id == "trtllm_engine_rebuild"
    vllm = faq.search(kb, "Do I have to rebuild the vLLM engine to run it on a different GPU?")
    assert "trtllm_engine_rebuild" not in [hit.id for hit in vllm]


def test_a_tag_written_as_a_phrase_counts_more_than_its_words_apart() -> None:
    """ "Bus error" is the shared-memory entry's tag; "encountered an error" alone would pick the
    illegal-memory-access entry (a real question from faq_tune/)."""
    kb = default_triager().kb
    question = "Fatal python error:Bus error. I deployed vllm on RTX4090 * 2 and encountered an error. Can anyone help me?"
    assert faq.search(kb, question)[0].id == "shm_size_ipc_host"


@pytest.mark.parametrize(
    ("question", "entry"),
    [
        ("How do I serve several LoRA adapters on one vLLM server?", "lora_adapters"),
        ("Does vLLM support AWQ quantized models?", "quantized_models"),
        ("how do I run the server on a particular GPU", "pick_gpu"),
        ("how to get JSON output matching my schema from sglang", "structured_output"),
        ("tool calls come back as plain text in content with vllm", "tool_calling"),
        ("does speculative decoding help throughput at high concurrency?", "speculative_decoding"),
        ("how to run 4 replicas of a 7B model with data parallelism", "data_parallel_replicas"),
    ],
)
def test_the_features_people_ask_about_have_entries(question: str, entry: str) -> None:
    """The topics most real questions without an entry were about (faq/ and faq_tune/, 2026-12-03)."""
    assert faq.search(default_triager().kb, question)[0].id == entry
