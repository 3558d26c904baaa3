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
    env.event(req.app_mention("the server is slow today, any idea?", bot_user_id=env.slack.bot_user_id))
    env.settle()
    [post] = env.posts()
    assert post["text"] == "No known signature matched this paste."


def test_a_bare_mention_gets_help_and_subcommands_work(env: Env) -> None:
    env.event(req.app_mention("", bot_user_id=env.slack.bot_user_id))
    env.event(req.app_mention("search kv cache", bot_user_id=env.slack.bot_user_id))
    env.settle()
    posts = {p["text"].split(" — ")[0]: p for p in env.posts()}
    assert "triage-bot" in posts
    assert "`/triage history [engine] [days]`" in json.dumps(posts["triage-bot"]["blocks"])
    [search] = [p for p in env.posts() if "Signatures matching" in p["text"]]
    assert "`vllm.kv_cache_no_memory`" in json.dumps(search["blocks"])
