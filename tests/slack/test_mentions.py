"""`@triage-bot …`: always answered, in the mention's thread; subcommands work there too."""

from __future__ import annotations

import json

from tests.support.slack_env import KV_ERROR, Env
from triage_bot.testing import slack_requests as req


def test_a_mention_with_an_error_is_answered_in_its_thread(env: Env) -> None:
    env.event(req.app_mention(KV_ERROR, ts="1700000000.000700", bot_user_id=env.slack.bot_user_id))
    env.settle()
    [post] = env.posts()
    assert post["thread_ts"] == "1700000000.000700"
    assert post["blocks"][0]["text"]["text"] == "No memory for KV cache blocks"
    assert f"<@{env.slack.bot_user_id}>" not in json.dumps(post)


def test_a_mention_without_a_known_error_still_gets_an_answer(env: Env) -> None:
    env.event(req.app_mention("the server is slow today", bot_user_id=env.slack.bot_user_id))
    env.settle()
    [post] = env.posts()
    assert post["text"] == "No known signature matched this paste."


def test_a_mentioned_question_gets_the_faq_answer(env: Env) -> None:
    env.event(
        req.app_mention("what does --gpu-memory-utilization control?", bot_user_id=env.slack.bot_user_id)
    )
    env.settle()
    [post] = env.posts()
    assert post["text"].startswith("What does gpu-memory-utilization mean?")
    assert "incident" not in json.dumps(post["blocks"]).lower()  # a question is not recorded as a paste


def test_a_mentioned_question_about_choosing_gets_the_decision_guide(slack, history) -> None:
    from tests.support.slack_env import start_env, stop_env
    from triage_bot.core import default_triager

    env = start_env(slack, default_triager(), history)  # the bundled knowledge, which has the guide
    try:
        question = "which engine should we use on MI300X for multi-turn agents?"
        env.event(req.app_mention(question, bot_user_id=env.slack.bot_user_id))
        env.settle()
        [post] = env.posts()
        assert post["text"].startswith("Choose SGLang")
        assert "TensorRT-LLM does not run on AMD GPUs (ROCm)" in json.dumps(post["blocks"])
    finally:
        stop_env(env)


def test_a_mentioned_question_no_entry_answers_says_so_and_how_to_paste(env: Env) -> None:
    env.event(req.app_mention("the server is slow today, any idea?", bot_user_id=env.slack.bot_user_id))
    env.settle()
    [post] = env.posts()
    assert post["text"].startswith("No FAQ entry answers that question.")
    assert "paste the error" in post["text"]


def test_a_mentioned_question_holding_an_error_is_triaged(env: Env) -> None:
    text = "why? ValueError: No available memory for the cache blocks. Try increasing gpu_memory_utilization"
    env.event(req.app_mention(text, bot_user_id=env.slack.bot_user_id))
    env.settle()
    [post] = env.posts()
    assert "vllm.kv_cache_no_memory" in json.dumps(post["blocks"])


def test_a_bare_mention_gets_help_and_subcommands_work(env: Env) -> None:
    env.event(req.app_mention("", bot_user_id=env.slack.bot_user_id))
    env.event(req.app_mention("search kv cache", bot_user_id=env.slack.bot_user_id))
    env.settle()
    posts = {p["text"].split(" — ")[0]: p for p in env.posts()}
    assert "triage-bot" in posts
    assert "`/triage history [engine] [days]`" in json.dumps(posts["triage-bot"]["blocks"])
    [search] = [p for p in env.posts() if "Signatures matching" in p["text"]]
    assert "`vllm.kv_cache_no_memory`" in json.dumps(search["blocks"])
