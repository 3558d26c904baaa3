"""`triage-bot serve --http` as a real process: migrates, serves signed events, stops cleanly on SIGTERM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.support.replica import Replica
from tests.support.secrets import SECRET_FORMS
from triage_bot.testing import slack_requests as req
from triage_bot.testing.slack_standin import SIGNING_SECRET, SlackStandin
from triage_bot.testing.waiting import wait_until

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.06 GiB is free."
)


def _replica(slack: SlackStandin, tmp_path: Path, **kwargs: Any) -> Replica:
    return Replica(slack, tmp_path, database_url=f"sqlite:///{tmp_path / 'bot.sqlite3'}", args=(), **kwargs)


def test_serve_http_end_to_end(slack: SlackStandin, tmp_path: Path) -> None:
    replica = _replica(slack, tmp_path).start()
    try:
        with req.SignedSender(replica.events_url, SIGNING_SECRET) as send:
            sent = send.event(req.event_callback(req.message(OOM, ts="1700000000.002000")))
            assert sent.status == 200
        [post] = slack.wait_for("chat.postMessage", timeout=30)
        assert post["thread_ts"] == "1700000000.002000" and "generic.cuda_oom" in post["text"]
    finally:
        output = replica.stop()
    assert replica.returncode == 0, output
    assert "finishing the work in flight" in output


def test_socket_mode_serves_the_probes_and_answers_over_the_websocket(
    slack: SlackStandin, tmp_path: Path
) -> None:
    """Socket Mode (the default) has no Slack endpoint, but an orchestrator still needs liveness and
    readiness: `serve` opens a small HTTP port with /healthz and /readyz only."""
    slack.start_socket_mode()
    replica = _replica(slack, tmp_path, socket_mode=True).start()
    try:
        slack.wait_connected()
        health = httpx.get(replica.url + "/healthz", timeout=5)
        assert health.status_code == 200 and health.json()["mode"] == "socket"
        assert httpx.get(replica.url + "/readyz", timeout=5).status_code in (200, 503)
        assert "triage_events_received_total" in httpx.get(replica.url + "/metrics", timeout=5).text
        with req.SignedSender(replica.events_url, SIGNING_SECRET) as send:  # no Slack endpoint on this port
            assert send.event(req.event_callback(req.message(OOM, ts="1700000000.004000"))).status == 404
        envelope = slack.push(req.event_callback(req.message(OOM, ts="1700000000.004001")))
        assert slack.wait_acked(envelope)["envelope_id"] == envelope.data["envelope_id"]
        [post] = slack.wait_for("chat.postMessage", timeout=30)
        assert post["thread_ts"] == "1700000000.004001" and "generic.cuda_oom" in post["text"]
    finally:
        output = replica.stop()
    assert replica.returncode == 0, output


def test_the_log_holds_no_secret(slack: SlackStandin, tmp_path: Path) -> None:
    """bolt logs the whole body of a request whose signature fails: every record is redacted."""
    paste = "\n".join(line for line, _ in SECRET_FORMS) + "\n" + OOM
    body = json.dumps(req.event_callback(req.message(paste, ts="1700000000.003000")))
    replica = _replica(slack, tmp_path).start()
    try:
        with req.SignedSender(replica.events_url, SIGNING_SECRET) as send:
            assert send.post(body, "application/json", signature="v0=" + "0" * 64).status == 401
            slack.fail("chat.postMessage", status=400, error="not_in_channel")  # a refusal is logged
            assert send.event(req.event_callback(req.message(paste, ts="1700000000.003001"))).status == 200
            assert wait_until(lambda: any(r.method == "chat.postMessage" for r in slack.requests), 30)
    finally:
        output = replica.stop()
    assert "signature" in output.lower() or "401" in output or "Invalid" in output, output[-2000:]
    leaked = [
        secret for _, secret in SECRET_FORMS if secret in output or secret[len(secret) // 2 :] in output
    ]
    assert leaked == [], output[-3000:]
