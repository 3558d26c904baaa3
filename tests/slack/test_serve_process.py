"""`triage-bot serve --http` as a real process: migrates, serves signed events, stops cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.secrets import SECRET_FORMS
from triage_bot.testing import slack_requests as req
from triage_bot.testing.slack_standin import BOT_TOKEN, SIGNING_SECRET, SlackStandin
from triage_bot.testing.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.06 GiB is free.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(slack: SlackStandin, tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "TRIAGE_", "DATABASE_URL"))}
    env |= {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_URL": slack.api_url,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'bot.sqlite3'}",
            "TRIAGE_SPOOL_PATH": str(tmp_path / "spool.jsonl")}
    process = subprocess.Popen([sys.executable, "-m", "triage_bot", "serve", "--http", "--host", "127.0.0.1",
                                "--port", str(port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the server did not come up: {process.communicate()[0]}")
        time.sleep(0.1)


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    return output


def test_serve_http_end_to_end(slack: SlackStandin, tmp_path: Path) -> None:
    process, url = _start(slack, tmp_path)
    try:
        with req.SignedSender(url + "/slack/events", SIGNING_SECRET) as send:
            sent = send.event(req.event_callback(req.message(OOM, ts="1700000000.002000")))
            assert sent.status == 200
        [post] = slack.wait_for("chat.postMessage", timeout=30)
        assert post["thread_ts"] == "1700000000.002000" and "generic.cuda_oom" in post["text"]
    finally:
        output = _stop(process)
    assert process.returncode == 0, output
    assert "finishing the work in flight" in output


def test_the_log_holds_no_secret(slack: SlackStandin, tmp_path: Path) -> None:
    """bolt logs the whole body of a request whose signature fails: every record is redacted."""
    paste = "\n".join(line for line, _ in SECRET_FORMS) + "\n" + OOM
    body = json.dumps(req.event_callback(req.message(paste, ts="1700000000.003000")))
    process, url = _start(slack, tmp_path)
    try:
        with req.SignedSender(url + "/slack/events", SIGNING_SECRET) as send:
            assert send.post(body, "application/json", signature="v0=" + "0" * 64).status == 401
            slack.fail("chat.postMessage", status=400, error="not_in_channel")  # a refusal is logged
            assert send.event(req.event_callback(req.message(paste, ts="1700000000.003001"))).status == 200
            assert wait_until(lambda: any(r.method == "chat.postMessage" for r in slack.requests), 30)
    finally:
        output = _stop(process)
    assert "signature" in output.lower() or "401" in output or "Invalid" in output, output[-2000:]
    leaked = [secret for _, secret in SECRET_FORMS if secret in output or secret[len(secret) // 2:] in output]
    assert leaked == [], output[-3000:]
