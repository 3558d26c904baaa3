"""HTTP mode: `/slack/events` (bolt's WSGI adapter), `/healthz` and `/readyz`, served by waitress;
`/metrics` (the bot's own Prometheus metrics, triage_bot/metrics.py) and `/alertmanager` (the
webhook receiver, with TRIAGE_ALERTMANAGER_TOKEN); in Socket Mode the same server carries all but
Slack's endpoint.

Why waitress: the bolt app is synchronous, so a WSGI server is its natural host (an ASGI server
would run it in a thread pool anyway); waitress is a production server in pure Python with no
fork and no C build, it runs in-process in a thread (so the tests and the benchmark drive the
same server that production runs), and it bounds request bodies, connections and threads.
gunicorn forks workers and cannot run inside a test process; uvicorn would need an ASGI wrapper
around a synchronous app.

`/healthz` answers from memory only (no database, no Slack, no matching), so a load balancer's
probe can never be slowed by a storm of large pastes.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from slack_bolt.adapter.wsgi import SlackRequestHandler

from triage_bot import metrics
from triage_bot.slack.app import SlackBot

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
ALERTMANAGER_PATH = "/alertmanager"
MAX_BODY = 5 * 1024 * 1024  # Slack's payloads are far smaller; anything bigger is not from Slack
CHANNEL_TIMEOUT_S = 10  # Slack sends a request at once; a connection silent this long is closed
CONNECTION_LIMIT = 1000


_TIMESTAMP = re.compile(r"^\d{1,12}$")
_SIGNATURE = re.compile(r"^v0=[0-9a-f]{64}$")


def _refuse(start_response: Callable[..., Any], status: str, error: str) -> Iterable[bytes]:
    body = json.dumps({"error": error}).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _json(start_response: Callable[..., Any], status: str, payload: dict[str, Any]) -> Iterable[bytes]:
    body = json.dumps(payload).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
        ],
    )
    return [body]


def wsgi_app(
    bot: SlackBot, events: bool = True
) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """The HTTP surface. `events=False` is Socket Mode's probe port: Slack's events arrive over the
    WebSocket, so only the probes and the metrics are served and every other path is a 404."""
    slack = SlackRequestHandler(bot.app, path=EVENTS_PATH)
    verify = events and bool(bot.deps.config.signing_secret)
    mode = "http" if events else "socket"

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if verify and path == EVENTS_PATH and environ.get("REQUEST_METHOD") == "POST":
            # a malformed signature header is a 401 here: bolt would raise on int("abc") and answer 500
            stamp = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", "")
            signature = environ.get("HTTP_X_SLACK_SIGNATURE", "")
            if not _TIMESTAMP.match(stamp) or not _SIGNATURE.match(signature):
                log.info("refused a request with malformed signature headers (401)")
                return _refuse(start_response, "401 Unauthorized", "invalid request")  # as bolt words it
        if path == HEALTH_PATH and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return _json(
                start_response,
                "200 OK",
                {
                    "ok": True,
                    "mode": mode,
                    "jobs_in_flight": bot.deps.executor.in_flight,
                    "outbox_in_memory": bot.delivery.pending_in_memory(),
                },
            )
        if path == READY_PATH and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            ready, report = bot.readiness.report()
            return _json(start_response, "200 OK" if ready else "503 Service Unavailable", report)
        if path == METRICS_PATH and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            body = metrics.exposition()
            start_response(
                "200 OK", [("Content-Type", metrics.CONTENT_TYPE), ("Content-Length", str(len(body)))]
            )
            return [body]
        if path == ALERTMANAGER_PATH and environ.get("REQUEST_METHOD") == "POST":
            return _alertmanager(bot, environ, start_response)
        if not events:
            return _refuse(
                start_response, "404 Not Found", "not found (Socket Mode: events come over the WebSocket)"
            )
        return slack(environ, start_response)

    return app


def authorized(header: str, token: str) -> bool:
    """`Bearer <token>`, or basic auth whose password is the token (Alertmanager's http_config)."""
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() == "bearer":
        return hmac.compare_digest(credentials.strip().encode(), token.encode())
    if scheme.lower() == "basic":
        try:
            _, _, password = base64.b64decode(credentials.strip(), validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return hmac.compare_digest(password.encode(), token.encode())
    return False


def _alertmanager(
    bot: SlackBot, environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    """Alertmanager's webhook: 200 once every alert is recorded (and posted), 5xx so it sends again."""
    from triage_bot.health.alertmanager import PayloadError, parse_payload

    token = bot.deps.config.alertmanager_token
    if not token:
        return _refuse(
            start_response, "404 Not Found", "not found (set TRIAGE_ALERTMANAGER_TOKEN to receive alerts)"
        )
    if not authorized(environ.get("HTTP_AUTHORIZATION", ""), token):
        log.info("refused an Alertmanager notification without the right credentials (401)")
        return _refuse(start_response, "401 Unauthorized", "invalid credentials")
    if bot.alertmanager is None:
        return _refuse(start_response, "503 Service Unavailable", "the incident history is unavailable")
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = -1
    if not 0 < length <= MAX_BODY:
        return _refuse(start_response, "400 Bad Request", "a JSON body is required")
    try:
        alerts = parse_payload(environ["wsgi.input"].read(length))
    except PayloadError as exc:
        return _refuse(start_response, "400 Bad Request", str(exc))
    try:
        outcome = bot.alertmanager.handle(alerts)
    except Exception as exc:
        log.error("an Alertmanager notification could not be handled (it will be sent again): %s", exc)
        return _refuse(start_response, "503 Service Unavailable", "not handled yet; send it again")
    return _json(start_response, "200 OK", {"ok": True, **vars(outcome)})


class HttpServer:
    """A waitress server for the app, on a thread or in the foreground."""

    def __init__(
        self, bot: SlackBot, host: str = "0.0.0.0", port: int = 3000, threads: int = 8, events: bool = True
    ):
        from waitress import create_server

        self.bot = bot
        self.events = events
        # idle or half-open connections are closed after CHANNEL_TIMEOUT_S and there is room for many:
        # a crowd of silent clients cannot lock Slack and the probes out
        self.server = create_server(
            wsgi_app(bot, events=events),
            host=host,
            port=port,
            threads=threads,
            ident="triage-bot",
            max_request_body_size=MAX_BODY,
            clear_untrusted_proxy_headers=True,
            channel_timeout=CHANNEL_TIMEOUT_S,
            cleanup_interval=2,
            connection_limit=CONNECTION_LIMIT,
            backlog=1024,
            # poll(), not select(): select cannot watch a descriptor numbered
            # 1024 or more, and 1,000 admitted connections plus the process's
            # own files pass that; the loop would die and close the server
            asyncore_use_poll=True,
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = self.server.effective_host
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.server.effective_port}"

    def start(self) -> HttpServer:
        self._thread = threading.Thread(target=self.server.run, name="triage-http", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        if self.events:
            log.info(
                "serving Slack's HTTP endpoints on %s%s (health: %s)", self.url, EVENTS_PATH, HEALTH_PATH
            )
        else:
            log.info("serving the probes on %s (%s, %s)", self.url, HEALTH_PATH, READY_PATH)
        self.server.run()

    def stop(self, timeout: float = 5.0) -> None:
        """Close every connection from inside the server's own loop (closing sockets from another thread
        races its select()), then stop the worker threads."""
        if self._thread is None:
            self.server.close()
            return
        closed = threading.Event()

        def close_all() -> None:  # the server's own close() also closes the trigger: the loop then ends
            for dispatcher in list(self.server._map.values()):
                if dispatcher is not self.server.trigger:
                    dispatcher.close()
            closed.set()

        try:
            self.server.trigger.pull_trigger(close_all)
        except OSError as exc:  # the loop already closed its trigger (it saw a descriptor of its own fail)
            log.warning("the HTTP server had already shut its loop down (%s); closing what is left", exc)
            close_all()
        closed.wait(timeout)
        self.server.task_dispatcher.shutdown(timeout=timeout)
        self._thread.join(timeout)
        self._thread = None
