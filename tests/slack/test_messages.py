"""Pasted errors in channels: the passive rule, threads, ignoring, once-only, repeats, hostile text."""

from __future__ import annotations

import json
import threading

from tests.support.slack_env import ADMIN, CHANNEL, KV_ERROR, Env, start_env, stop_env
from triage_bot.slack.blocks import answer_message
from triage_bot.testing import slack_requests as req


def test_passive_paste_is_answered_in_its_thread_with_the_exact_answer(env: Env) -> None:
    event = req.message(KV_ERROR, ts="1700000000.000100")
    env.event(event)
    env.settle()
    [post] = env.posts()
    expected = answer_message(env.bot.deps.job.triager.triage(KV_ERROR), incident_id=1)
    assert post["channel"] == CHANNEL
    assert post["thread_ts"] == "1700000000.000100"
    # the notification leads with the command, then says what failed
    assert post["text"] == (
        "vllm serve <model> --gpu-memory-utilization <util> | "
        "No memory for KV cache blocks (vllm.kv_cache_no_memory, confidence 97%)"
    )
    assert post["blocks"] == expected.blocks
    assert post["link_names"] is False
    assert post["blocks"][0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "No memory for KV cache blocks", "emoji": True},
    }
    assert "`vllm.kv_cache_no_memory`" in json.dumps(post["blocks"][1])
    # the fix is the third block: the recovery command in a code block, its placeholders escaped (not links)
    assert post["blocks"][2]["text"]["text"].startswith("*Fix*\n")
    assert (
        "```vllm serve &lt;model&gt; --gpu-memory-utilization &lt;util&gt;```"
        in post["blocks"][2]["text"]["text"]
    )
    actions = post["blocks"][-1]
    assert [e["action_id"] for e in actions["elements"]] == [
        "triage_acknowledge",
        "triage_resolve",
        "triage_wrong_match",
        "triage_helpful",
        "triage_details",
    ]
    assert json.loads(actions["elements"][0]["value"]) == {"i": 1, "s": "vllm.kv_cache_no_memory"}
    [incident] = env.history.history()
    assert (incident.signature_id, incident.target, incident.status) == (
        "vllm.kv_cache_no_memory",
        CHANNEL,
        "open",
    )


def test_a_reply_in_a_thread_is_answered_in_that_thread(env: Env) -> None:
    env.event(req.message(KV_ERROR, ts="1700000000.000200", thread_ts="1700000000.000001"))
    env.settle()
    assert [p["thread_ts"] for p in env.posts()] == ["1700000000.000001"]


def test_chatter_and_unsure_matches_stay_silent(env: Env) -> None:
    env.event(req.message("lgtm, merging after lunch"))
    env.event(
        req.message("EngineDeadError: EngineCore encountered an issue.")
    )  # a wrapper: not sure of the cause
    env.settle()
    assert env.posts() == []
    assert env.history.history() == []  # nothing recorded for a reply the bot did not give


def test_mentions_and_templates_in_a_paste_are_echoed_inert(env: Env) -> None:
    paste = "<!channel> <!here> <@U0BOB> {{7*7}} &lt;!channel&gt; " + KV_ERROR
    env.event(req.message(paste))
    env.settle()
    [post] = env.posts()
    raw = json.dumps(post)
    for live in ("<!channel>", "<!here>", "<@U0BOB>", "<!"):
        assert live not in raw
    [matched] = [
        e["text"]
        for b in post["blocks"]
        if b["type"] == "context"
        for e in b["elements"]
        if e["text"].startswith("Matched: ")
    ]
    # live entities become the plain words the reader saw; typed brackets stay escaped
    assert matched.startswith("Matched: `@channel @here @U0BOB {{7*7}} &lt;!channel&gt; ValueError")
    # the template is never evaluated: no text the reader sees carries its value (ids and
    # timestamps in the payload's metadata are not looked at: they come from the wall clock)
    assert not [text for text in _visible_texts(post) if "49" in text]


def _visible_texts(post: dict) -> list[str]:
    """Every string a reader sees in a post: the fallback text and each text object of its blocks."""
    found = [post.get("text", "")]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(post.get("blocks", []))
    return found


def test_own_and_other_bots_messages_edits_and_deletions_are_ignored(env: Env) -> None:
    bot_user, bot_id = env.slack.bot_user_id, env.slack.bot_id
    env.event(req.message(KV_ERROR, user=bot_user, bot_id=bot_id))
    env.event(req.message(KV_ERROR, user="U0OTHERBOT", bot_id="B0OTHER"))
    env.event(req.message(KV_ERROR, subtype="bot_message", bot_id="B0CLASSIC", user=None))
    edited = req.message(
        "",
        subtype="message_changed",
        hidden=True,
        message={"type": "message", "user": "U0ALICE", "text": KV_ERROR, "ts": "1.1"},
    )
    env.event(edited)
    env.event(req.message("", subtype="message_deleted", hidden=True, deleted_ts="1.1"))
    env.settle()
    assert env.posts() == []


def test_other_bots_are_answered_when_configured(make_env) -> None:
    env = make_env(reply_to_bots=True)
    env.event(req.message(KV_ERROR, user="U0OTHERBOT", bot_id="B0OTHER"))
    env.settle()
    assert len(env.posts()) == 1


def test_a_message_that_mentions_the_bot_is_answered_once(env: Env) -> None:
    ts = "1700000000.000300"
    text = f"<@{env.slack.bot_user_id}> {KV_ERROR}"
    env.event(req.message(text, ts=ts))  # both events arrive for one message
    env.event({**req.message(text, ts=ts), "type": "app_mention"})
    env.settle()
    assert [p["thread_ts"] for p in env.posts()] == [ts]


def test_a_retried_event_is_not_answered_twice(env: Env) -> None:
    envelope = req.event_callback(req.message(KV_ERROR), bot_user_id=env.slack.bot_user_id)
    assert env.send.event(envelope).status == 200
    for attempt in (1, 2, 3):  # Slack's retries carry the same event_id
        assert env.send.event(envelope, retry_num=attempt).status == 200
    env.settle()
    assert len(env.posts()) == 1
    [incident] = env.history.history()
    assert incident.occurrence_count == 1


def test_concurrent_deliveries_to_two_replicas_post_once(env: Env, slack, triager, history) -> None:
    second = start_env(slack, triager, history)
    try:
        envelope = req.event_callback(req.message(KV_ERROR), bot_user_id=slack.bot_user_id)
        results: list[int] = []
        threads = [
            threading.Thread(target=lambda s=s, n=n: results.append(s.event(envelope, retry_num=n).status))
            for n, s in enumerate([env.send, second.send, env.send, second.send])
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        env.settle()
        second.settle()
        assert results == [200, 200, 200, 200]
        assert len(slack.bodies("chat.postMessage")) == 1
    finally:
        stop_env(second)


def test_a_repeat_of_an_open_incident_gets_a_short_reply(env: Env) -> None:
    env.event(req.message(KV_ERROR))
    env.settle()
    env.event(req.message(KV_ERROR, ts="1700000001.000001"))
    env.settle()
    first, repeat = env.posts()
    assert len(first["blocks"]) > 4
    assert repeat["thread_ts"] == "1700000001.000001"
    # the fix first, with this paste's own numbers, then the repeat line
    assert (
        repeat["text"].startswith("vllm serve ")
        and " | No memory for KV cache blocks: :repeat: Seen 2 times since " in repeat["text"]
    )
    assert "not resolved before" in repeat["text"]
    assert len(repeat["blocks"]) == 4 and repeat["blocks"][-1]["type"] == "actions"
    assert (
        repeat["blocks"][1]["text"]["text"].startswith("*Fix*\n```")
        and "--gpu-memory-utilization" in repeat["blocks"][1]["text"]["text"]
    )


def test_after_a_resolve_the_next_repeat_says_who_resolved_it(env: Env) -> None:
    env.event(req.message(KV_ERROR))
    env.settle()
    env.command("resolve 1 raised --gpu-memory-utilization to 0.95", user=ADMIN)
    env.settle()
    assert "Noted how: raised --gpu-memory-utilization to 0.95" in json.dumps(env.responses()[-1])
    env.event(req.message(KV_ERROR))
    env.settle()
    env.event(req.message(KV_ERROR))
    env.settle()
    _, recurring, repeat = env.posts()
    shown = json.dumps(recurring["blocks"])  # full answer, with the history: who, and how
    assert (
        f"last resolved by {ADMIN} on " in shown and "how: raised --gpu-memory-utilization to 0.95" in shown
    )
    assert "Seen 2 times since" in repeat["text"] and f"last resolved by {ADMIN}" in repeat["text"]
    assert "(how: raised --gpu-memory-utilization to 0.95)" in repeat["text"]


def test_a_muted_failure_is_recorded_but_not_posted(env: Env) -> None:
    env.command("mute vllm.kv_cache_no_memory 2h", user=ADMIN)
    env.settle()
    env.event(req.message(KV_ERROR))
    env.settle()
    assert env.posts() == []
    [incident] = env.history.history()
    assert incident.signature_id == "vllm.kv_cache_no_memory"


def test_a_100000_character_message_gets_a_clear_answer_within_limits(env: Env) -> None:
    filler = "INFO 05-13 10:46:43 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s\n" * 1200
    paste = (filler[:60_000] + KV_ERROR + "\n" + filler)[:100_000]
    env.event(req.message(paste))
    env.event(req.message("x" * 100_000, channel_type="im", channel="D0ALICE"))
    env.settle()
    by_channel = {p["channel"]: p for p in env.posts()}
    answered, unknown = by_channel[CHANNEL], by_channel["D0ALICE"]
    assert "No memory for KV cache blocks (vllm.kv_cache_no_memory" in answered["text"]
    assert unknown["text"] == "No known signature matched this paste."
    assert "The paste was very long" in json.dumps(unknown["blocks"])
    for post in (answered, unknown):  # the stand-in rejects anything over Slack's limits
        assert len(json.dumps(post)) < 20_000


def test_a_direct_message_is_always_answered(env: Env) -> None:
    env.event(req.message("how do I fix this thing", channel="D0ALICE", channel_type="im"))
    env.settle()
    [post] = env.posts()
    assert post["channel"] == "D0ALICE" and post["text"] == "No known signature matched this paste."


def test_a_repeat_with_new_values_gets_its_own_fix(env: Env) -> None:
    env.event(req.message(KV_ERROR + "\n$ vllm serve org/model-a --max-model-len 8192"))
    env.settle()
    env.event(
        req.message(KV_ERROR + "\n$ vllm serve org/model-b --max-model-len 8192", ts="1700000001.000001")
    )
    env.settle()
    first, repeat = env.posts()
    assert "vllm serve org/model-a" in json.dumps(first["blocks"])
    assert ":repeat: Seen 2 times" in repeat["text"]
    fix = json.dumps(repeat["blocks"])
    assert "vllm serve org/model-b" in fix and "model-a" not in fix  # this paste's own values
