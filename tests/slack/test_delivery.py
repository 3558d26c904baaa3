"""Rate limits and outages: a 429's Retry-After is honoured, and nothing the bot owes is dropped."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from tests.support.slack_env import KV_ERROR, Env
from triage_bot.slack.delivery import wait_for_outbox
from triage_bot.testing import slack_requests as req


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
    assert (row["method"], row["state"], row["payload"]["channel"]) == (
        "chat.postMessage",
        "pending",
        "C0INCIDENT",
    )
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
    assert "blocks" not in post and "No memory for KV cache blocks (" in post["text"]


def test_with_the_database_away_failed_replies_wait_in_memory(env: Env) -> None:
    env.bot.deps.delivery.store = None  # as if the outbox table could not be written
    env.slack.rate_limit("chat.postMessage", times=3, retry_after=1)
    env.event(req.message(KV_ERROR))
    env.settle()
    assert env.bot.delivery.pending_in_memory() == 1
    assert env.bot.delivery.sweep() == 1 and len(env.posts()) == 1


def test_a_cut_answer_is_followed_by_the_full_text_as_a_file(env: Env) -> None:
    from triage_bot.slack.blocks import Message
    from triage_bot.slack.listeners import post_answer

    cut = Message("Title", [{"type": "section", "text": {"type": "mrkdwn", "text": "part"}}], cut=True)
    post_answer(
        env.bot.deps, None, "C0INCIDENT", "1700000000.000001", cut, None, "vllm", lambda: "the whole answer"
    )
    [url] = env.slack.bodies("files.getUploadURLExternal")
    assert (url["filename"], url["length"]) == ("triage-answer.txt", str(len("the whole answer")))
    [upload] = env.slack.calls("upload")
    assert upload.body["_bytes"] == len("the whole answer")
    [complete] = env.slack.bodies("files.completeUploadExternal")
    assert (complete["channel_id"], complete["thread_ts"]) == ("C0INCIDENT", "1700000000.000001")
    assert complete["files"][0]["title"] == "The full answer"


def test_retry_after_is_read_in_every_form() -> None:
    from email.utils import format_datetime

    from triage_bot.slack.client import parse_retry_after

    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("30") == 30.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now) == 90.0
    assert (
        parse_retry_after(format_datetime(now - timedelta(seconds=5), usegmt=True), now) == 0.0
    )  # past: now
    for junk in (None, "", "soon", "-4", "nan"):
        assert parse_retry_after(junk) == 1.0


@pytest.mark.parametrize("retry_after", ["1.5", "0.2"])
def test_a_decimal_retry_after_is_honoured_not_dropped(env: Env, retry_after: str) -> None:
    env.slack.rate_limit("chat.postMessage", times=1, retry_after=retry_after)
    env.event(req.message(KV_ERROR))
    env.settle()
    limited, posted = env.slack.calls("chat.postMessage")
    assert limited.status == 429 and posted.status == 200
    assert posted.at - limited.at >= float(retry_after)
    assert len(env.posts()) == 1


def test_an_http_date_retry_after_is_honoured(env: Env) -> None:
    from email.utils import format_datetime

    env.slack.rate_limit(
        "chat.postMessage",
        times=1,
        retry_after=format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True),
    )
    env.event(req.message(KV_ERROR))
    env.settle()
    assert [c.status for c in env.slack.calls("chat.postMessage")] == [429, 200]


def test_a_long_retry_after_waits_in_the_outbox_not_in_a_worker(env: Env) -> None:
    env.slack.rate_limit("chat.postMessage", times=1, retry_after=90)
    env.event(req.message(KV_ERROR))
    env.settle(10)  # the worker is free at once: it did not sleep 90 s
    assert env.posts() == []
    [row] = env.bot.deps.store.rows()
    assert row["state"] == "pending" and row["last_error"] == "429 ratelimited"
    assert (
        row["next_at"] >= datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=80)
        if row["next_at"].tzinfo is None
        else row["next_at"] >= datetime.now(UTC) + timedelta(seconds=80)
    )
    assert env.bot.delivery.sweep(now=datetime.now(UTC) + timedelta(seconds=30)) == 0  # not due yet
    assert env.bot.delivery.sweep(now=datetime.now(UTC) + timedelta(seconds=120)) == 1
    assert len(env.posts()) == 1


def test_posts_to_one_channel_are_paced_and_the_rest_wait_in_the_outbox(make_env) -> None:
    env = make_env(channel_pace_s=0.5)
    for n in range(12):
        env.event(req.message(KV_ERROR, ts=f"1700000400.{n:06d}"))
    env.settle(30)
    landed = env.slack.calls("chat.postMessage")
    # posts a worker may wait for (the next 3 s of slots) go out paced; later ones wait in the outbox
    assert 1 <= len(landed) <= 8
    assert all(b.at - a.at >= 0.45 for a, b in itertools.pairwise(landed))
    assert wait_for_outbox(env.bot.delivery, timeout=30, now=datetime.now(UTC) + timedelta(minutes=1))
    everything = env.slack.calls("chat.postMessage")
    assert len(everything) == 12 and all(c.status == 200 for c in everything)
    assert all(b.at - a.at >= 0.45 for a, b in itertools.pairwise(everything))


def test_a_post_that_times_out_after_landing_is_not_posted_twice(make_env) -> None:
    env = make_env(timeout_s=1)
    env.slack.slow("chat.postMessage", 2.0)  # the message lands, the answer comes after the timeout
    env.event(req.message(KV_ERROR, ts="1700000500.000001"))
    env.settle(30)
    env.slack.slow("chat.postMessage", 0)
    wait_for_outbox(env.bot.delivery, timeout=5, now=datetime.now(UTC) + timedelta(minutes=1))
    assert len(env.slack.messages["C0INCIDENT"]) == 1  # one message in Slack, found again by its key
    [looked] = env.slack.bodies("conversations.replies")
    assert looked["ts"] == "1700000500.000001"
    [message] = env.slack.messages["C0INCIDENT"]
    assert message["metadata"]["event_payload"]["key"].startswith("Ev")
    # the message found again is remembered as the answer, so Resolved and repeats can reach it
    [incident] = env.history.history()
    posted = env.history.find_posted(incident_id=incident.id)
    assert posted is not None and posted.ts == message["ts"]
