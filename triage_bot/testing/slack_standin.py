"""A local Slack: the Web API methods the bot calls, file downloads, response_url and Socket Mode.

Shipped with the package (as click ships `CliRunner`) so the bot's tests, its benchmark and anyone
extending it exercise the real slack_sdk client, retry handlers and bolt adapters against real
HTTP and WebSocket connections, with nothing of our own code mocked.

What it does, the way Slack does it:
- records every request (method, path, headers, parsed body) for exact assertions;
- answers `auth.test`, `chat.postMessage`, `chat.postEphemeral`, `chat.update`, `views.publish`,
  `views.open`, `files.info`, `files.getUploadURLExternal`, `files.completeUploadExternal`,
  `apps.connections.open`, the `url_private` download (which needs the bot token, as Slack's does;
  without it Slack serves its HTML login page) and `response_url` posts;
- rejects what Slack rejects: a missing or wrong token, blocks over the Block Kit limits
  (`invalid_blocks`), text over 40,000 characters (`msg_too_long`), a channel the bot is not in;
- answers 429 with `Retry-After` on demand (`rate_limit`), or any status (`fail`);
- serves Socket Mode: a WebSocket endpoint that says hello, pushes envelopes and records acks.

Everything binds 127.0.0.1 on a free port, so suites can run in parallel.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from triage_bot.blockkit import MAX_VIEW_BLOCKS
from triage_bot.slack.blocks import validate
from triage_bot.testing.waiting import wait_until

BOT_TOKEN = "xoxb-standin-token"
APP_TOKEN = "xapp-1-A0STANDIN-1-standin"
SIGNING_SECRET = "standin-signing-secret"
MAX_TEXT = 40_000
_JSON_FIELDS = ("blocks", "attachments", "view", "files", "metadata")


@dataclass
class Request:
    """One request the stand-in received."""

    method: str  # Web API method ("chat.postMessage"), or "response_url", "download", "upload"
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float
    status: int = 200


@dataclass
class StoredFile:
    id: str
    name: str
    content: bytes
    mimetype: str = "text/plain"
    filetype: str = "text"
    size: int | None = None  # reported size, when it should differ from len(content)


@dataclass
class _Fault:
    status: int
    times: int
    retry_after: int | float | str | None = None
    error: str = "ratelimited"


@dataclass
class Envelope:
    """A Socket Mode envelope pushed to the bot, and the ack it got back."""

    data: dict[str, Any]
    ack: dict[str, Any] | None = None
    acked_at: float | None = None
    sent_at: float | None = None


class SlackStandin:
    """The stand-in server; use as a context manager or call `start()` / `stop()`."""

    def __init__(
        self,
        *,
        bot_user_id: str = "U0STANDBOT",
        bot_id: str = "B0STANDBOT",
        team_id: str = "T0STANDIN",
        bot_token: str = BOT_TOKEN,
        enforce_limits: bool = True,
    ):
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.team_id = team_id
        self.bot_token = bot_token
        self.enforce_limits = enforce_limits
        self.requests: list[Request] = []
        self.files: dict[str, StoredFile] = {}
        self.uploads: dict[str, bytes] = {}
        self.not_in_channels: set[str] = set()
        self.stop_response_urls = False  # True: response_url posts get 503, as when Slack is having trouble
        self._faults: dict[str, list[_Fault]] = {}
        self._delays: dict[str, float] = {}
        self._holds: dict[str, threading.Event] = {}
        self.messages: dict[str, list[dict[str, Any]]] = {}  # channel -> messages the bot posted
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._socket: _SocketModeServer | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> SlackStandin:
        standin = self

        class Handler(_Handler):
            owner = standin

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="slack-standin",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._socket is not None:
            self._socket.stop()
            self._socket = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> SlackStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base(self) -> str:
        assert self._server is not None, "start() the stand-in first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        """The value for SLACK_API_URL (with a path prefix, as a proxy or GovSlack would have)."""
        return self.base + "/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"{self.base}/response/{name}"

    # -- scripting -------------------------------------------------------------------------

    def rate_limit(self, method: str, times: int = 1, retry_after: int | float | str = 1) -> None:
        """The next `times` calls of `method` get 429 with `Retry-After: retry_after` (any form:
        seconds, "1.5", an HTTP date)."""
        with self._lock:
            self._faults.setdefault(method, []).append(_Fault(429, times, retry_after))

    def fail(self, method: str, status: int = 500, times: int = 1, error: str = "internal_error") -> None:
        """The next `times` calls of `method` get HTTP `status` (200 means `ok: false, error`)."""
        with self._lock:
            self._faults.setdefault(method, []).append(_Fault(status, times, None, error))

    def slow(self, method: str, seconds: float) -> None:
        """Answer `method` (or "download") `seconds` late: the call is handled at once (a posted
        message lands) and only the answer is slow, as when Slack or the network is."""
        with self._lock:
            self._delays[method] = seconds

    def hold(self, method: str) -> None:
        """Answer no call of `method` (or "download", "response_url") until `release(method)`: for ack tests."""
        with self._lock:
            self._holds[method] = threading.Event()

    def release(self, method: str) -> None:
        """Let held calls of `method` through, and answer later ones at once."""
        with self._lock:
            gate = self._holds.pop(method, None)
        if gate is not None:
            gate.set()

    def add_file(
        self,
        content: bytes,
        name: str = "log.txt",
        mimetype: str = "text/plain",
        filetype: str = "text",
        size: int | None = None,
    ) -> dict[str, Any]:
        """Store a file; return the `files` entry a `file_share` message event carries."""
        with self._lock:
            file_id = f"F{next(self._ids):08d}"
            self.files[file_id] = StoredFile(file_id, name, content, mimetype, filetype, size)
        return {
            "id": file_id,
            "name": name,
            "mimetype": mimetype,
            "filetype": filetype,
            "size": size if size is not None else len(content),
        }

    # -- assertions ------------------------------------------------------------------------

    def calls(self, method: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.method == method]

    def bodies(self, method: str) -> list[dict[str, Any]]:
        return [r.body for r in self.calls(method) if r.status == 200 and r.body.get("_ok", True)]

    def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until `method` was answered successfully `count` times; return those bodies."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                done = [
                    r.body
                    for r in self.requests
                    if r.method == method and r.status == 200 and r.body.get("_ok", True)
                ]
                if len(done) >= count:
                    return done
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [(r.method, r.status) for r in self.requests]
                    raise AssertionError(f"expected {count} successful {method}, got {len(done)}; saw {seen}")
                self._changed.wait(left)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- Socket Mode -----------------------------------------------------------------------

    def start_socket_mode(self) -> str:
        """Start the WebSocket endpoint; `apps.connections.open` hands out its URL from now on."""
        if self._socket is None:
            self._socket = _SocketModeServer()
            self._socket.start()
        return self._socket.url

    def push(
        self,
        payload: dict[str, Any],
        kind: str = "events_api",
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
        accepts_response_payload: bool = False,
    ) -> Envelope:
        """Send one envelope to the connected bot; its ack lands on the returned Envelope."""
        assert self._socket is not None, "start_socket_mode() first"
        data = {
            "envelope_id": f"env-{next(self._ids)}",
            "type": kind,
            "payload": payload,
            "accepts_response_payload": accepts_response_payload,
        }
        if kind == "events_api":
            data["retry_attempt"] = retry_attempt
            data["retry_reason"] = retry_reason
        return self._socket.push(data)

    def wait_acked(self, envelope: Envelope, timeout: float = 10.0) -> dict[str, Any]:
        """The frame the bot sent back for `envelope` (its ack)."""
        assert self._socket is not None, "start_socket_mode() first"
        return self._socket.wait_acked(envelope, timeout)

    def wait_connected(self, timeout: float = 10.0) -> None:
        assert self._socket is not None, "start_socket_mode() first"
        if not self._socket.connected.wait(timeout):
            raise AssertionError("the bot did not connect to the Socket Mode endpoint")

    # -- request handling ------------------------------------------------------------------

    def _record(self, request: Request) -> None:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()

    def _fault_for(self, method: str) -> _Fault | None:
        with self._lock:
            pending = self._faults.get(method) or []
            if not pending:
                return None
            fault = pending[0]
            fault.times -= 1
            if fault.times <= 0:
                pending.pop(0)
            return fault

    def _next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def api(
        self, method: str, body: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, str], dict[str, Any]]:
        """One Web API call: (status, headers, JSON body)."""
        fault = self._fault_for(method)
        if fault is not None:
            if fault.status == 429:
                retry_after = "1" if fault.retry_after is None else str(fault.retry_after)
                return 429, {"Retry-After": retry_after}, {"ok": False, "error": "ratelimited"}
            return fault.status, {}, {"ok": False, "error": fault.error}
        if method == "apps.connections.open":
            if not (token or "").startswith("xapp-"):
                return 200, {}, {"ok": False, "error": "not_allowed_token_type"}
            if self._socket is None:
                return 200, {}, {"ok": False, "error": "socket_mode_not_started"}
            return 200, {}, {"ok": True, "url": self._socket.url}
        if not token:
            return 200, {}, {"ok": False, "error": "not_authed"}
        if token != self.bot_token:
            return 200, {}, {"ok": False, "error": "invalid_auth"}
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return 200, {}, {"ok": False, "error": "unknown_method"}
        return 200, {}, handler(body)

    def _limits(self, body: dict[str, Any], max_blocks: int = 50) -> dict[str, Any] | None:
        if not self.enforce_limits:
            return None
        if len(str(body.get("text") or "")) > MAX_TEXT:
            return {"ok": False, "error": "msg_too_long"}
        blocks = body.get("blocks")
        if isinstance(blocks, list):
            problems = validate(blocks, max_blocks=max_blocks)
            if problems:
                return {"ok": False, "error": "invalid_blocks", "errors": problems}
        if not body.get("text") and not blocks:
            return {"ok": False, "error": "no_text"}
        return None

    def _m_auth_test(self, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://standin.slack.test/",
            "team": "Stand-in",
            "user": "triage-bot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _m_chat_postMessage(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = str(body.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if channel in self.not_in_channels:
            return {"ok": False, "error": "not_in_channel"}
        rejected = self._limits(body)
        if rejected:
            return rejected
        ts = self._next_ts()
        message = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "ts": ts,
            "text": body.get("text", ""),
            "blocks": body.get("blocks", []),
        }
        if body.get("thread_ts"):
            message["thread_ts"] = body["thread_ts"]
        if isinstance(body.get("metadata"), dict):
            message["metadata"] = body["metadata"]
        with self._lock:
            self.messages.setdefault(channel, []).append(message)
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _listed(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        keep = str(body.get("include_all_metadata", "")).lower() in ("1", "true")
        shown = [m if keep else {k: v for k, v in m.items() if k != "metadata"} for m in messages]
        return {"ok": True, "messages": shown, "has_more": False}

    def _m_conversations_replies(self, body: dict[str, Any]) -> dict[str, Any]:
        channel, ts = str(body.get("channel") or ""), str(body.get("ts") or "")
        if not channel or not ts:
            return {"ok": False, "error": "invalid_arguments"}
        with self._lock:
            thread = [m for m in self.messages.get(channel, []) if m["ts"] == ts or m.get("thread_ts") == ts]
        return self._listed(thread, body)

    def _m_conversations_history(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = str(body.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        with self._lock:
            recent = list(reversed(self.messages.get(channel, [])))[: int(body.get("limit") or 100)]
        return self._listed(recent, body)

    def _m_chat_postEphemeral(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("channel") or not body.get("user"):
            return {
                "ok": False,
                "error": "channel_not_found" if not body.get("channel") else "user_not_in_channel",
            }
        rejected = self._limits(body)
        return rejected or {"ok": True, "message_ts": self._next_ts()}

    def _m_chat_update(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("channel") or not body.get("ts"):
            return {"ok": False, "error": "message_not_found"}
        rejected = self._limits(body)
        return rejected or {
            "ok": True,
            "channel": body["channel"],
            "ts": body["ts"],
            "text": body.get("text", ""),
        }

    def _view(self, body: dict[str, Any]) -> dict[str, Any]:
        view = body.get("view") or {}
        blocks = view.get("blocks") or []
        problems = validate(blocks, max_blocks=MAX_VIEW_BLOCKS) if self.enforce_limits else []
        if problems:
            return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": problems}}
        return {"ok": True, "view": {**view, "id": f"V{next(self._ids):08d}", "team_id": self.team_id}}

    def _m_views_publish(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("user_id"):
            return {"ok": False, "error": "invalid_arguments"}
        return self._view(body)

    def _m_views_open(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        return self._view(body)

    def _m_files_info(self, body: dict[str, Any]) -> dict[str, Any]:
        stored = self.files.get(str(body.get("file") or ""))
        if stored is None:
            return {"ok": False, "error": "file_not_found"}
        url = f"{self.base}/files-pri/{self.team_id}-{stored.id}/{stored.name}"
        return {
            "ok": True,
            "file": {
                "id": stored.id,
                "name": stored.name,
                "title": stored.name,
                "mimetype": stored.mimetype,
                "filetype": stored.filetype,
                "size": stored.size if stored.size is not None else len(stored.content),
                "url_private": url,
                "url_private_download": url + "?download=1",
                "is_external": False,
            },
        }

    def _m_files_getUploadURLExternal(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("filename") or not body.get("length"):
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{next(self._ids):08d}"
        return {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, body: dict[str, Any]) -> dict[str, Any]:
        files = body.get("files") or []
        missing = [f.get("id") for f in files if f.get("id") not in self.uploads]
        if not files or missing:
            return {"ok": False, "error": "file_not_found"}
        return {
            "ok": True,
            "files": [
                {"id": f["id"], "title": f.get("title", ""), "size": len(self.uploads[f["id"]])}
                for f in files
            ],
        }

    def download(self, path: str, token: str | None) -> tuple[int, str, bytes]:
        """The url_private download: (status, content type, bytes)."""
        if token != self.bot_token:
            # Slack answers an unauthenticated url_private fetch with its sign-in page
            return (
                200,
                "text/html; charset=utf-8",
                b"<!DOCTYPE html><html><body>Sign in to Slack</body></html>",
            )
        file_id = path.split("/")[2].split("-", 1)[-1] if path.count("/") >= 2 else ""
        stored = self.files.get(file_id)
        if stored is None:
            return 404, "text/plain", b"Not Found"
        return 200, stored.mimetype or "application/octet-stream", stored.content


def _parse_body(raw: bytes, content_type: str, query: str) -> dict[str, Any]:
    body: dict[str, Any] = {k: v[-1] for k, v in parse_qs(query).items()}
    if raw:
        if "json" in content_type:
            try:
                loaded = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                loaded = {"_raw": raw.decode("utf-8", "replace")}
            body.update(loaded if isinstance(loaded, dict) else {"_json": loaded})
        elif "x-www-form-urlencoded" in content_type:
            body.update({k: v[-1] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()})
        else:
            body["_bytes"] = len(raw)
    for key in _JSON_FIELDS:
        if isinstance(body.get(key), str):
            with contextlib.suppress(json.JSONDecodeError):
                body[key] = json.loads(body[key])
    return body


class _Handler(BaseHTTPRequestHandler):
    owner: SlackStandin
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the records
        return

    def _token(self, body: dict[str, Any]) -> str | None:
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return auth[len("Bearer ") :].strip()
        return body.get("token")

    _late: float = 0.0

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        if self._late:
            time.sleep(self._late)
            self._late = 0.0
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        owner = self.owner
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = parts.path
        kind = (
            "download"
            if path.startswith("/files-pri/")
            else "response_url"
            if path.startswith("/response/")
            else path.rsplit("/", 1)[-1]
        )
        delay = owner._delays.get(kind)
        if delay:
            self._late = delay  # handled now, answered late (see _send)
        gate = owner._holds.get(kind)
        if gate is not None:
            gate.wait(120)
        if path.startswith("/files-pri/"):
            status, ctype, data = owner.download(path, self._token({}))
            owner._record(
                Request("download", path, headers, {"file": path.split("/")[2]}, time.time(), status)
            )
            self._send(status, data, ctype)
            return
        if path.startswith("/upload/"):
            owner.uploads[path.rsplit("/", 1)[-1]] = raw
            owner._record(Request("upload", path, headers, {"_bytes": len(raw)}, time.time()))
            self._send(200, f"OK - {len(raw)}".encode(), "text/plain")
            return
        body = _parse_body(raw, headers.get("content-type", ""), parts.query)
        if path.startswith("/response/"):
            status = 503 if owner.stop_response_urls else 200
            owner._record(Request("response_url", path, headers, body, time.time(), status))
            self._send(
                status, b'{"ok":true}' if status == 200 else b"Service Unavailable", "application/json"
            )
            return
        method = path.rsplit("/", 1)[-1]
        status, extra, answer = owner.api(method, body, self._token(body))
        record = Request(method, path, headers, {**body, "_ok": answer.get("ok", False)}, time.time(), status)
        if not answer.get("ok"):
            record.body["_error"] = answer.get("error")
        owner._record(record)
        self._send(status, json.dumps(answer).encode(), "application/json; charset=utf-8", extra)

    do_GET = _handle
    do_POST = _handle


class _SocketModeServer:
    """A WebSocket endpoint speaking Slack's Socket Mode envelope protocol (hello, envelopes, acks)."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []
        self.outgoing: queue.Queue[Envelope] = queue.Queue()
        self.connected = threading.Event()
        self.connections = 0
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._acked = threading.Condition()

    def start(self) -> None:
        try:
            from websockets.sync.server import serve
        except ImportError as exc:  # pragma: no cover - the dev extra installs it
            raise RuntimeError("the Socket Mode stand-in needs the 'websockets' package") from exc
        self._server = serve(self._serve, "127.0.0.1", 0)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="slack-standin-ws", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.socket.getsockname()[:2]
        return f"ws://{host}:{port}/link/?ticket=standin"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    def push(self, data: dict[str, Any]) -> Envelope:
        envelope = Envelope(data)
        with self._acked:
            self.envelopes.append(envelope)
        self.outgoing.put(envelope)
        return envelope

    def wait_acked(self, envelope: Envelope, timeout: float = 10.0) -> dict[str, Any]:
        with self._acked:
            if not self._acked.wait_for(lambda: envelope.ack is not None, timeout):
                raise AssertionError(f"no ack for {envelope.data['envelope_id']}")
        assert envelope.ack is not None
        return envelope.ack

    def _serve(self, ws: Any) -> None:
        self.connections += 1
        ws.send(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": self.connections,
                    "debug_info": {"host": "standin", "approximate_connection_time": 3600},
                    "connection_info": {"app_id": "A0STANDIN"},
                }
            )
        )
        self.connected.set()
        while True:
            try:
                envelope = self.outgoing.get_nowait()
            except queue.Empty:
                envelope = None
            if envelope is not None:
                envelope.sent_at = time.time()
                ws.send(json.dumps(envelope.data))
            try:
                raw = ws.recv(timeout=0.02)
            except TimeoutError:
                continue
            except Exception:
                return  # the client went away
            self._on_frame(raw)

    def _on_frame(self, raw: str | bytes) -> None:
        try:
            frame = json.loads(raw)
        except (TypeError, ValueError):
            return
        with self._acked:
            for envelope in self.envelopes:
                if envelope.data["envelope_id"] == frame.get("envelope_id") and envelope.ack is None:
                    envelope.ack = frame
                    envelope.acked_at = time.time()
                    self._acked.notify_all()


__all__ = ["APP_TOKEN", "BOT_TOKEN", "SIGNING_SECRET", "Envelope", "Request", "SlackStandin", "wait_until"]
