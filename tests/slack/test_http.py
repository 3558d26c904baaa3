"""HTTP mode as Slack reaches it: signatures, replay window, health, and acks well within 3 s."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from bot.slack.app import build
from bot.slack.config import SlackConfig, SlackConfigError
from bot.testing import slack_requests as req
from bot.testing.slack_standin import BOT_TOKEN
from tests.slack.conftest import KV_ERROR, Env


def _envelope(env: Env) -> str:
    return json.dumps(req.event_callback(req.message(KV_ERROR), bot_user_id=env.slack.bot_user_id))


def test_a_bad_signature_is_refused_with_401_and_nothing_runs(env: Env) -> None:
    body = _envelope(env)
    bad = env.send.post(body, "application/json", signature="v0=" + "0" * 64)
    tampered_sig = env.send.verifier.generate_signature(timestamp=str(int(time.time())), body=body)
    tampered = env.send.post(body.replace("cache", "cachE"), "application/json", signature=tampered_sig)
    unsigned = httpx.post(env.send.url, content=body, headers={"Content-Type": "application/json"})
    for response in (bad, tampered):
        assert (response.status, response.json()) == (401, {"error": "invalid request"})
    assert unsigned.status_code == 401
    env.settle()
    assert env.posts() == [] and env.history.history() == []


@pytest.mark.parametrize("skew", [-301, 301])
def test_a_stale_or_future_timestamp_is_refused_with_401(env: Env, skew: int) -> None:
    sent = env.send.post(_envelope(env), "application/json", timestamp=int(time.time()) + skew)
    assert sent.status == 401
    env.settle()
    assert env.posts() == []


def test_url_verification_and_healthz(env: Env) -> None:
    sent = env.send.post(json.dumps({"type": "url_verification", "challenge": "abc123", "token": "t"}),
                         "application/json")
    assert (sent.status, sent.json()) == (200, {"challenge": "abc123"})
    health = httpx.get(env.server.url + "/healthz")
    assert health.status_code == 200 and health.json()["ok"] is True
    assert httpx.get(env.server.url + "/nope").status_code == 404


def test_acks_never_wait_for_the_work_behind_them(env: Env) -> None:
    env.slack.hold("chat.postMessage")  # no reply can land until the test lets it
    try:
        for n in range(12):
            env.event(req.message(KV_ERROR, ts=f"1700000000.{n:06d}"))  # asserts the 200
        env.command("help")
        # every request was acked while none of the work behind it could finish: the ack does
        # not wait for the work (Slack's limit is 3 s; how fast acks are is measured in bench/)
        assert env.posts() == []
    finally:
        env.slack.release("chat.postMessage")
    env.settle(30)
    assert len(env.posts()) == 12


def test_a_listener_that_fails_still_acks_200_every_time(env: Env) -> None:
    env.bot.deps.job.triager = None  # every triage now raises inside the lazy work
    statuses = [env.event(req.message(KV_ERROR, ts=f"1700000001.{n:06d}")).status for n in range(10)]
    env.settle()
    assert statuses == [200] * 10 and env.posts() == []


def test_http_mode_refuses_to_start_without_a_signing_secret(slack) -> None:
    with pytest.raises(SlackConfigError, match="SLACK_SIGNING_SECRET is required"):
        build(SlackConfig(bot_token=BOT_TOKEN, api_url=slack.api_url), http=True, use_history=False)
