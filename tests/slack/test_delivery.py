"""Rate limits and outages: a 429's Retry-After is honoured, and nothing the bot owes is dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.slack.delivery import wait_for_outbox
from bot.testing import slack_requests as req
from tests.slack.conftest import KV_ERROR, Env


def test_a_429_is_retried_after_its_retry_after(env: Env) -> None:
    env.slack.rate_limit("chat.postMessage", times=1, retry_after=1)
    env.event(req.message(KV_ERROR))
    env.settle()
    limited, posted = env.slack.calls("chat.postMessage")
    assert (limited.status, limited.body["_error"]) == (429, "ratelimited")
    assert posted.status == 200 and posted.body["_ok"]
    assert posted.at - limited.at >= 1.0  # waited as long as Slack asked
    assert len(env.posts()) == 1


def test_a_reply_slack_keeps_refusing_waits_in_the_outbox_and_lands_later(env: Env) -> None:
    env.slack.rate_limit("chat.postMessage", times=3, retry_after=1)  # more than the 2 retries
    env.event(req.message(KV_ERROR))
    env.settle()
    assert env.posts() == []
    [row] = env.bot.deps.store.rows()
    assert (row["method"], row["state"], row["payload"]["channel"]) == ("chat.postMessage", "pending", "C0INCIDENT")
    assert row["last_error"] == "429 ratelimited"
    # the sweeper (a timer in production) retries once the wait is over
    assert env.bot.delivery.sweep(now=datetime.now(UTC) + timedelta(minutes=1)) == 1
    [post] = env.posts()
    assert post["thread_ts"] == row["payload"]["thread_ts"] and post["blocks"] == row["payload"]["blocks"]
    assert env.bot.deps.store.rows()[0]["state"] == "sent"
    assert env.bot.delivery.sweep(now=datetime.now(UTC) + timedelta(hours=1)) == 0  # sent once, not again


def test_server_errors_are_retried(env: Env) -> None:
    env.slack.fail("chat.postMessage", status=503, times=1, error="service_unavailable")
    env.event(req.message(KV_ERROR))
    env.settle()
    assert [c.status for c in env.slack.calls("chat.postMessage")] == [503, 200]


def test_a_response_url_that_is_down_is_retried_from_the_outbox(env: Env) -> None:
    env.slack.stop_response_urls = True
    env.command("help")
    env.settle()
    assert env.responses() == []
    env.slack.stop_response_urls = False
    assert wait_for_outbox(env.bot.delivery, now=datetime.now(UTC) + timedelta(minutes=1))
    [response] = env.responses()
    assert response["text"].startswith("triage-bot")


def test_rejected_blocks_fall_back_to_text(env: Env) -> None:
    env.slack.fail("chat.postMessage", status=200, times=1, error="invalid_blocks")
    env.event(req.message(KV_ERROR))
    env.settle()
    [post] = env.posts()
    assert "blocks" not in post and post["text"].startswith("No memory for KV cache blocks")


def test_with_the_database_away_failed_replies_wait_in_memory(env: Env) -> None:
    env.bot.deps.delivery.store = None  # as if the outbox table could not be written
    env.slack.rate_limit("chat.postMessage", times=3, retry_after=1)
    env.event(req.message(KV_ERROR))
    env.settle()
    assert env.bot.delivery.pending_in_memory() == 1
    assert env.bot.delivery.sweep() == 1 and len(env.posts()) == 1


def test_a_cut_answer_is_followed_by_the_full_text_as_a_file(env: Env) -> None:
    from bot.slack.blocks import Message
    from bot.slack.listeners import post_answer

    cut = Message("Title", [{"type": "section", "text": {"type": "mrkdwn", "text": "part"}}], cut=True)
    post_answer(env.bot.deps, None, "C0INCIDENT", "1700000000.000001", cut, None, "vllm", lambda: "the whole answer")
    [url] = env.slack.bodies("files.getUploadURLExternal")
    assert (url["filename"], url["length"]) == ("triage-answer.txt", str(len("the whole answer")))
    [upload] = env.slack.calls("upload")
    assert upload.body["_bytes"] == len("the whole answer")
    [complete] = env.slack.bodies("files.completeUploadExternal")
    assert (complete["channel_id"], complete["thread_ts"]) == ("C0INCIDENT", "1700000000.000001")
    assert complete["files"][0]["title"] == "The full answer"
