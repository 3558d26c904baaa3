"""Message shortcut "Triage this message": any message, answered in its thread."""

from __future__ import annotations

import json

from tests.support.slack_env import CHANNEL, KV_ERROR, Env
from triage_bot.testing import slack_requests as req


def test_the_shortcut_answers_in_the_messages_thread(env: Env) -> None:
    sent = env.send.interactive(
        req.message_shortcut(KV_ERROR, response_url=env.slack.response_url(), message_ts="1700000000.000800")
    )
    assert sent.status == 200 and sent.body == ""
    env.settle()
    [post] = env.posts()
    assert (post["channel"], post["thread_ts"]) == (CHANNEL, "1700000000.000800")
    assert post["blocks"][0]["text"]["text"] == "No memory for KV cache blocks"
    [incident] = env.history.history()
    assert incident.occurrence_count == 1


def test_the_shortcut_on_a_reply_answers_in_the_parent_thread_and_on_chatter_says_so(env: Env) -> None:
    env.send.interactive(
        req.message_shortcut(
            "just chatting",
            response_url=env.slack.response_url(),
            message_ts="1700000000.000802",
            thread_ts="1700000000.000801",
        )
    )
    env.settle()
    [post] = env.posts()
    assert post["thread_ts"] == "1700000000.000801"
    assert post["text"] == "No known signature matched this paste."


def test_in_a_channel_the_bot_is_not_in_the_answer_goes_to_the_user(env: Env) -> None:
    env.slack.not_in_channels.add(CHANNEL)
    env.send.interactive(req.message_shortcut(KV_ERROR, response_url=env.slack.response_url()))
    env.settle()
    assert env.posts() == []
    [response] = env.responses()
    assert response["response_type"] == "ephemeral"
    assert response["blocks"][0]["text"]["text"].startswith("*I'm not in this channel")
    assert "No memory for KV cache blocks" in json.dumps(response["blocks"])
