"""Requests Slack sends to the app (events, slash commands, shortcuts, button clicks, modal
submissions), built in Slack's shapes and signed the way Slack signs them.

Signing uses slack_sdk's own `SignatureVerifier.generate_signature`, the counterpart of the check
bolt runs, so a test proves the app accepts what Slack sends and rejects what it does not.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import httpx
from slack_sdk.signature import SignatureVerifier

TEAM = "T0STANDIN"
APP = "A0STANDIN"
_seq = itertools.count(1)


def _ts() -> str:
    return f"{int(time.time())}.{next(_seq):06d}"


@dataclass
class Sent:
    status: int
    body: str
    headers: dict[str, str]
    elapsed: float  # seconds until the app answered (the ack)

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class SignedSender:
    """POSTs signed requests to the app's `/slack/events` over real HTTP."""

    def __init__(self, url: str, signing_secret: str, *, timeout: float = 10.0):
        self.url = url
        self.verifier = SignatureVerifier(signing_secret)
        self.http = httpx.Client(timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> SignedSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def post(
        self,
        body: str,
        content_type: str,
        *,
        timestamp: int | None = None,
        signature: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Sent:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        sig = signature or str(self.verifier.generate_signature(timestamp=ts, body=body))
        all_headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": sig,
            **(headers or {}),
        }
        started = time.perf_counter()
        response = self.http.post(self.url, content=body.encode("utf-8"), headers=all_headers)
        elapsed = time.perf_counter() - started
        return Sent(response.status_code, response.text, dict(response.headers), elapsed)

    def event(
        self,
        envelope: dict[str, Any],
        *,
        retry_num: int | None = None,
        retry_reason: str = "http_timeout",
        **kwargs: Any,
    ) -> Sent:
        headers = dict(kwargs.pop("headers", None) or {})
        if retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = retry_reason
        return self.post(json.dumps(envelope), "application/json", headers=headers, **kwargs)

    def command(self, form: dict[str, str], **kwargs: Any) -> Sent:
        return self.post(urlencode(form), "application/x-www-form-urlencoded", **kwargs)

    def interactive(self, payload: dict[str, Any], **kwargs: Any) -> Sent:
        return self.post(
            "payload=" + quote(json.dumps(payload)), "application/x-www-form-urlencoded", **kwargs
        )


# -- payloads, in Slack's shapes ---------------------------------------------------------------


def event_callback(
    event: dict[str, Any], *, event_id: str | None = None, bot_user_id: str = "U0STANDBOT"
) -> dict[str, Any]:
    """The Events API envelope around one event."""
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "api_app_id": APP,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_seq):010d}",
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM, "user_id": bot_user_id, "is_bot": True}],
    }


def message(
    text: str,
    *,
    channel: str = "C0INCIDENT",
    user: str = "U0ALICE",
    ts: str | None = None,
    thread_ts: str | None = None,
    channel_type: str = "channel",
    files: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "message",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts or _ts(),
        "channel_type": channel_type,
        "team": TEAM,
    }
    event["event_ts"] = event["ts"]
    if thread_ts:
        event["thread_ts"] = thread_ts
    if files:
        event["subtype"] = "file_share"
        event["files"] = files
    event.update(extra)
    return event


def app_mention(
    text: str,
    *,
    channel: str = "C0INCIDENT",
    user: str = "U0ALICE",
    ts: str | None = None,
    bot_user_id: str = "U0STANDBOT",
    **extra: Any,
) -> dict[str, Any]:
    event = {
        "type": "app_mention",
        "channel": channel,
        "user": user,
        "text": f"<@{bot_user_id}> {text}",
        "ts": ts or _ts(),
        "team": TEAM,
    }
    event["event_ts"] = event["ts"]
    event.update(extra)
    return event


def slash_command(
    text: str,
    *,
    response_url: str,
    command: str = "/triage",
    channel: str = "C0INCIDENT",
    user: str = "U0ALICE",
) -> dict[str, str]:
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "team_domain": "standin",
        "channel_id": channel,
        "channel_name": "incidents",
        "user_id": user,
        "user_name": user.lower(),
        "command": command,
        "text": text,
        "api_app_id": APP,
        "response_url": response_url,
        "trigger_id": f"{next(_seq)}.{TEAM}.trigger",
    }


def _user(user: str) -> dict[str, Any]:
    return {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM}


def block_action(
    action_id: str,
    value: str,
    *,
    response_url: str,
    channel: str = "C0INCIDENT",
    user: str = "U0ALICE",
    message_ts: str | None = None,
    ephemeral: bool = False,
    message: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ts = message_ts or _ts()
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": _user(user),
        "api_app_id": APP,
        "token": "legacy-verification-token",
        "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": ephemeral},
        "trigger_id": f"{next(_seq)}.{TEAM}.trigger",
        "team": {"id": TEAM, "domain": "standin"},
        "channel": {"id": channel, "name": "incidents"},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "triage_answer_actions",
                "type": "button",
                "value": value,
                "text": {"type": "plain_text", "text": action_id},
                "action_ts": _ts(),
            }
        ],
    }
    if message is not None:
        payload["message"] = message
    return payload


def message_shortcut(
    text: str,
    *,
    response_url: str,
    callback_id: str = "triage_message",
    channel: str = "C0INCIDENT",
    user: str = "U0ALICE",
    author: str = "U0BOB",
    message_ts: str | None = None,
    thread_ts: str | None = None,
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    msg: dict[str, Any] = {"type": "message", "user": author, "text": text, "ts": message_ts or _ts()}
    if thread_ts:
        msg["thread_ts"] = thread_ts
    if files:
        msg["files"] = files
    return {
        "type": "message_action",
        "callback_id": callback_id,
        "token": "legacy-verification-token",
        "action_ts": _ts(),
        "trigger_id": f"{next(_seq)}.{TEAM}.trigger",
        "team": {"id": TEAM, "domain": "standin"},
        "user": _user(user),
        "channel": {"id": channel, "name": "incidents"},
        "message": msg,
        "message_ts": msg["ts"],
        "response_url": response_url,
        "api_app_id": APP,
    }


def view_submission(
    callback_id: str, values: dict[str, Any], *, private_metadata: str = "", user: str = "U0ALICE"
) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "standin"},
        "user": _user(user),
        "api_app_id": APP,
        "token": "legacy-verification-token",
        "trigger_id": f"{next(_seq)}.{TEAM}.trigger",
        "view": {
            "id": f"V{next(_seq):08d}",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": private_metadata,
            "state": {"values": values},
        },
    }


def app_home_opened(user: str = "U0ALICE") -> dict[str, Any]:
    return {"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": "home", "event_ts": _ts()}
