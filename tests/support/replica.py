"""`triage-bot serve --http` as a real process, for tests that kill it, restart it, or run two."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from triage_bot.testing.slack_standin import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, SlackStandin


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replica:
    """One bot process against the Slack stand-in: HTTP mode, or Socket Mode with its probe port
    (`socket_mode=True`; call `slack.start_socket_mode()` first)."""

    def __init__(
        self,
        slack: SlackStandin,
        workdir: Path,
        *,
        database_url: str,
        replica_id: str = "a",
        extra_env: dict[str, str] | None = None,
        args: tuple[str, ...] = ("--no-scheduler",),
        program: tuple[str, ...] = (sys.executable, "-m", "triage_bot"),
        socket_mode: bool = False,
    ):
        self.slack, self.workdir = slack, workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "TRIAGE_", "DATABASE_URL"))}
        env |= {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": slack.api_url,
            "DATABASE_URL": database_url,
            "TRIAGE_REPLICA_ID": replica_id,
            "TRIAGE_SPOOL_PATH": str(workdir / f"spool-{replica_id}.jsonl"),
            "TRIAGE_INBOX_PATH": str(workdir / f"inbox-{replica_id}.sqlite3"),
            "TRIAGE_INBOX_SWEEP_S": "0.2",
            "TRIAGE_SLACK_CHANNEL_PACE_S": "0",
        }
        if socket_mode:
            env["SLACK_APP_TOKEN"] = APP_TOKEN
        self.mode_args: tuple[str, ...] = () if socket_mode else ("--http",)
        self.env = env | (extra_env or {})
        self.args, self.program = args, program
        self.process: subprocess.Popen[str] | None = None

    @property
    def events_url(self) -> str:
        return self.url + "/slack/events"

    def start(self, timeout: float = 90) -> Replica:
        self.process = subprocess.Popen(
            [
                *self.program,
                "serve",
                *self.mode_args,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *self.args,
            ],
            cwd=self.workdir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise AssertionError(f"the replica did not come up: {self.process.communicate()[0][-3000:]}")
            time.sleep(0.1)

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, nothing finished."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> str:
        """SIGTERM and the process's output."""
        if self.process is None or self.process.poll() is not None:
            return self.process.communicate()[0] if self.process else ""
        self.process.send_signal(signal.SIGTERM)
        output, _ = self.process.communicate(timeout=60)
        return output
