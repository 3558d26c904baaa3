"""HTTP mode as Slack reaches it: signatures, replay window, health, and acks well within 3 s."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.support.slack_env import KV_ERROR, Env
from triage_bot.slack.app import build
from triage_bot.slack.config import SlackConfig, SlackConfigError
from triage_bot.testing import slack_requests as req
from triage_bot.testing.slack_standin import BOT_TOKEN


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


@pytest.mark.parametrize(
    ("timestamp", "signature"),
    [
        ("abc", None),
        ("1.5e9", None),
        ("", None),
        ("9" * 40, None),  # not a number of seconds
        (None, "v0=zz"),
        (None, "v1=" + "0" * 64),
        (None, ""),
        (None, "v0=" + "0" * 64 + "00"),
    ],
)
def test_malformed_signature_headers_get_401_not_500(
    env: Env, caplog: pytest.LogCaptureFixture, timestamp: str | None, signature: str | None
) -> None:
    body = _envelope(env)
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": str(int(time.time())) if timestamp is None else timestamp,
        "X-Slack-Signature": env.send.verifier.generate_signature(timestamp=str(int(time.time())), body=body)
        if signature is None
        else signature,
    }
    response = httpx.post(env.send.url, content=body, headers=headers)
    assert (response.status_code, response.json()) == (401, {"error": "invalid request"})
    assert "Traceback" not in caplog.text
    env.settle()
    assert env.posts() == []


def test_a_replayed_slash_command_runs_once(env: Env) -> None:
    form = req.slash_command(
        KV_ERROR, response_url=env.slack.response_url(), user="U0ALICE", channel="C0INCIDENT"
    )
    stamp = int(time.time())
    for _ in range(3):  # the same signed request, sent three times within Slack's 5-minute window
        assert env.send.command(form, timestamp=stamp).status == 200
    env.settle()
    assert len(env.responses()) == 1


# Slack's window is 5 minutes (300 s). The stamp is whole seconds, so `int(time.time()) + 301` can
# be only 300.05 s ahead when the server reads its clock a moment later: that once passed. 305 s
# stays outside the window whatever the rounding and the latency.
@pytest.mark.parametrize("skew", [-305, 305])
def test_a_stale_or_future_timestamp_is_refused_with_401(env: Env, skew: int) -> None:
    sent = env.send.post(_envelope(env), "application/json", timestamp=int(time.time()) + skew)
    assert sent.status == 401
    env.settle()
    assert env.posts() == []


def test_url_verification_and_healthz(env: Env) -> None:
    sent = env.send.post(
        json.dumps({"type": "url_verification", "challenge": "abc123", "token": "t"}), "application/json"
    )
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


def test_readiness_reports_each_part_and_a_dead_database_only_degrades(env: Env) -> None:
    ready = httpx.get(env.server.url + "/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["database"] == {"ok": True, "detail": "reachable"}
    assert ready.json()["checks"]["slack"]["ok"] is True
    from triage_bot.history.db import session_factory_from_url

    env.history.session_factory = session_factory_from_url("sqlite:////nonexistent/dir/db.sqlite3")
    degraded = httpx.get(env.server.url + "/readyz")
    assert degraded.status_code == 200 and degraded.json()["degraded"] is True
    assert degraded.json()["checks"]["database"]["ok"] is False
    assert "/nonexistent" not in degraded.text  # no internal address in what the probe shows


def test_readiness_fails_when_slack_refuses_our_token(env: Env) -> None:
    env.slack.fail("chat.postMessage", status=200, error="invalid_auth")
    env.event(req.message(KV_ERROR, ts="1700000300.000001"))
    env.settle()
    refused = httpx.get(env.server.url + "/readyz")
    assert refused.status_code == 503 and "invalid_auth" in refused.json()["checks"]["slack"]["detail"]


def test_a_listener_that_fails_still_acks_200_every_time(env: Env) -> None:
    env.bot.deps.job.triager = None  # every triage now raises inside the lazy work
    statuses = [env.event(req.message(KV_ERROR, ts=f"1700000001.{n:06d}")).status for n in range(10)]
    env.settle()
    assert statuses == [200] * 10 and env.posts() == []


def test_http_mode_refuses_to_start_without_a_signing_secret(slack) -> None:
    with pytest.raises(SlackConfigError, match="SLACK_SIGNING_SECRET is required"):
        build(SlackConfig(bot_token=BOT_TOKEN, api_url=slack.api_url), http=True, use_history=False)


def test_a_crowd_of_idle_connections_does_not_lock_out_slack_or_the_probe(env: Env) -> None:
    import socket

    host, port = env.server.url.removeprefix("http://").split(":")
    idle = []
    try:
        for _ in range(150):  # half-open clients that connect and say nothing
            sock = socket.create_connection((host, int(port)), timeout=5)
            idle.append(sock)
        assert (
            httpx.get(env.server.url + "/healthz", timeout=5).status_code == 200
        )  # before idle ones time out
        assert env.event(req.message(KV_ERROR, ts="1700000800.000001")).status == 200
    finally:
        for sock in idle:
            sock.close()
    env.settle()
    assert len(env.posts()) == 1


def test_connections_numbered_past_1024_are_served(env: Env) -> None:
    """A busy process has more than 1,024 descriptors open (1,000 connections are admitted): the
    server waits with poll(), since select() cannot watch a descriptor numbered 1024 or more."""
    import os
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1500:
        pytest.skip(f"the descriptor limit here is {soft}")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert max(held) >= 1024
        assert httpx.get(env.server.url + "/healthz", timeout=5).status_code == 200
        assert env.event(req.message(KV_ERROR, ts="1700000900.000001")).status == 200
        env.settle()
    finally:
        for fd in held:
            os.close(fd)
    assert len(env.posts()) == 1
    assert httpx.get(env.server.url + "/healthz", timeout=5).status_code == 200  # the server is still up


def test_stop_finishes_even_when_the_loop_closed_its_own_trigger(env: Env) -> None:
    """If a descriptor of the server fails under it, waitress closes the server and its trigger; a
    later stop() must still close what is left instead of raising on the closed trigger."""
    env.server.server.trigger.close()
    env.server.stop()
    with pytest.raises(httpx.HTTPError):
        httpx.get(env.server.url + "/healthz", timeout=2)
