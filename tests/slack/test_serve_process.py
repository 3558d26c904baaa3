"""`triage-bot serve --http` as a real process: migrates, serves signed events, stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bot.testing import slack_requests as req
from bot.testing.slack_standin import BOT_TOKEN, SIGNING_SECRET, SlackStandin

ROOT = Path(__file__).resolve().parents[2]
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.06 GiB is free.")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_http_end_to_end(slack: SlackStandin, tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "TRIAGE_", "DATABASE_URL"))}
    env |= {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_URL": slack.api_url,
            "DATABASE_URL": f"sqlite:///{tmp_path / 'bot.sqlite3'}",
            "TRIAGE_SPOOL_PATH": str(tmp_path / "spool.jsonl")}
    process = subprocess.Popen([sys.executable, "-m", "bot", "serve", "--http", "--host", "127.0.0.1",
                                "--port", str(port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.1)
        with req.SignedSender(url + "/slack/events", SIGNING_SECRET) as send:
            sent = send.event(req.event_callback(req.message(OOM, ts="1700000000.002000")))
            assert sent.status == 200
        [post] = slack.wait_for("chat.postMessage", timeout=30)
        assert post["thread_ts"] == "1700000000.002000" and "generic.cuda_oom" in post["text"]
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert "finishing the work in flight" in output
