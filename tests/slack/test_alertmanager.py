"""Alertmanager in: a real Alertmanager (Debian's prometheus-alertmanager) started by the test, its
webhook pointed at the bot, alerts fired and resolved through its own API.

One firing alert gives one incident and one post (with the recovery of the health state its name
names), its repeats join that incident, and its resolution gives one edit. The payload checks and
the credentials are tested on the endpoint directly.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml

from tests.support.replica import free_port
from tests.support.slack_env import Env, make_history, start_env, stop_env
from triage_bot.core import default_triager
from triage_bot.health.alertmanager import AlertmanagerReceiver, PayloadError, parse_payload
from triage_bot.slack.alerts import ACTION_ACK
from triage_bot.testing.slack_standin import SlackStandin
from triage_bot.testing.waiting import wait_until

TOKEN = "am-webhook-token-0123456789"
ALERTS = "C0ALERTS"
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
KV_ALERT = {
    "alertname": "VllmKvCacheSaturated",
    "engine": "vllm",
    "instance": "llama-prod",
    "severity": "warning",
    "model": "meta-llama/Llama-3.1-8B-Instruct",
}


@pytest.fixture
def am_env(tmp_path: Path) -> Iterator[Env]:
    with SlackStandin() as slack:
        env = start_env(
            slack,
            default_triager(),
            make_history(tmp_path / "history.sqlite3"),
            alertmanager_token=TOKEN,
            alert_channel=ALERTS,
        )
        try:
            yield env
        finally:
            stop_env(env)


def _payload(
    status: str, labels: dict[str, str], fingerprint: str = "3f2b1a0c9d8e7f60", **extra: object
) -> dict:
    alert = {
        "status": status,
        "labels": labels,
        "annotations": {"summary": "KV cache is saturated: 98% used"},
        "startsAt": "2026-11-30T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": fingerprint,
        "generatorURL": "http://prometheus:9090/graph",
    } | extra
    return {
        "version": "4",
        "groupKey": "{}:{}",
        "status": status,
        "receiver": "triage",
        "groupLabels": {},
        "commonLabels": labels,
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": [alert],
        "truncatedAlerts": 0,
    }


def _post(env: Env, body: dict | bytes, auth: str | None = f"Bearer {TOKEN}") -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": auth} if auth else {})}
    return httpx.post(env.server.url + "/alertmanager", content=content, headers=headers, timeout=30)


def _top_level_alert_posts(env: Env) -> list[dict]:
    return [p for p in env.posts() if p["channel"] == ALERTS and not p.get("thread_ts")]


@pytest.mark.parametrize(
    "auth",
    [
        None,
        "Bearer wrong-token-000000000000",
        f"Token {TOKEN}",
        "Basic " + base64.b64encode(b"triage:wrong").decode(),
        "Basic !!!",
    ],
)
def test_a_notification_without_the_token_is_refused(am_env: Env, auth: str | None) -> None:
    assert _post(am_env, _payload("firing", KV_ALERT), auth).status_code == 401
    assert am_env.posts() == [] and am_env.history.history() == []


def test_basic_auth_with_the_token_as_password_is_accepted(am_env: Env) -> None:
    auth = "Basic " + base64.b64encode(f"alertmanager:{TOKEN}".encode()).decode()
    assert _post(am_env, _payload("firing", KV_ALERT), auth).json()["opened"] == 1


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"version": "3", "alerts": []}',
        json.dumps(_payload("firing", KV_ALERT, fingerprint="'; DROP TABLE x")).encode(),
        json.dumps(_payload("pending", KV_ALERT)).encode(),
        json.dumps(_payload("firing", KV_ALERT, startsAt="yesterday")).encode(),
    ],
)
def test_what_is_not_a_v4_payload_is_a_400_and_records_nothing(am_env: Env, body: bytes) -> None:
    response = _post(am_env, body)
    assert response.status_code == 400 and response.json()["error"]
    assert am_env.history.history() == []
    with pytest.raises(PayloadError):
        parse_payload(body)


def test_without_a_token_configured_the_endpoint_does_not_exist(env: Env) -> None:
    assert _post(env, _payload("firing", KV_ALERT)).status_code == 404


def test_repeats_join_the_incident_and_a_repeated_resolution_does_nothing(am_env: Env) -> None:
    for _ in range(3):  # the first notification, then Alertmanager's repeat_interval resends
        assert _post(am_env, _payload("firing", KV_ALERT)).status_code == 200
    for _ in range(2):
        assert _post(am_env, _payload("resolved", KV_ALERT, endsAt="2026-11-30T10:20:00Z")).status_code == 200
    assert wait_until(lambda: len(am_env.slack.bodies("chat.update")) >= 1, 10)
    am_env.settle()
    assert len(_top_level_alert_posts(am_env)) == 1 and len(am_env.slack.bodies("chat.update")) == 1
    [incident] = am_env.history.history()
    # a resend of the same alert (same fingerprint, same start) is the same occurrence, not a new one
    assert incident.status == "resolved" and incident.occurrence_count == 1


def test_an_alert_that_names_no_engine_is_posted_without_an_answer(am_env: Env) -> None:
    labels = {"alertname": "DiskFull", "instance": "node-7", "severity": "critical"}
    summary = {"summary": "Disk /var is 97% full"}
    assert (
        _post(am_env, _payload("firing", labels, fingerprint="aa01", annotations=summary)).json()["opened"]
        == 1
    )
    [post] = _top_level_alert_posts(am_env)
    assert "DiskFull" in json.dumps(post["blocks"]) and "What to do" not in json.dumps(post["blocks"])
    [incident] = am_env.history.history()
    assert incident.signature_id == "alertmanager.diskfull" and incident.target == "am:aa01"


def test_the_receiver_maps_alert_names_to_health_states() -> None:
    [alert] = parse_payload(json.dumps(_payload("firing", KV_ALERT)).encode())
    assert (alert.engine_kind, alert.state) == ("vllm", "kv_cache_saturated")
    assert AlertmanagerReceiver.signature(alert) == "alertmanager.vllmkvcachesaturated"
    named = {"alertname": "SGLangServerDown", "job": "sglang-qwen"}
    [down] = parse_payload(
        json.dumps(_payload("firing", named, annotations={"summary": "no answer"})).encode()
    )
    assert (down.engine_kind, down.state) == ("sglang", "down")


# -- a real Alertmanager ---------------------------------------------------------------------


class RealAlertmanager:
    def __init__(self, tmp_path: Path, webhook: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "route": {
                "receiver": "triage",
                "group_by": ["alertname", "instance"],
                "group_wait": "0s",
                "group_interval": "1s",
                "repeat_interval": "1h",
            },
            "receivers": [
                {
                    "name": "triage",
                    "webhook_configs": [
                        {
                            "url": webhook,
                            "send_resolved": True,
                            "http_config": {"authorization": {"credentials": TOKEN}},
                        }
                    ],
                }
            ],
        }
        (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        assert ALERTMANAGER is not None
        self.process = subprocess.Popen(
            [
                ALERTMANAGER,
                f"--config.file={tmp_path / 'alertmanager.yml'}",
                f"--storage.path={tmp_path / 'am'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",
                "--log.level=warn",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if not wait_until(self._ready, 30):
            self.process.kill()
            raise AssertionError(f"alertmanager did not start: {self.process.communicate()[0][-2000:]}")

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/-/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return self.process.poll() is not None  # exited: stop waiting, the check above fails

    def fire(self, labels: dict[str, str], annotations: dict[str, str], ends: datetime | None = None) -> None:
        alert = {
            "labels": labels,
            "annotations": annotations,
            "startsAt": (datetime.now(UTC) - timedelta(minutes=5)).isoformat(),
        }
        if ends is not None:
            alert["endsAt"] = ends.isoformat()
        response = httpx.post(self.url + "/api/v2/alerts", json=[alert], timeout=10)
        assert response.status_code == 200, response.text

    def stop(self) -> str:
        self.process.terminate()
        return self.process.communicate(timeout=30)[0]


@pytest.mark.skipif(
    ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (.ci/run installs it)"
)
def test_a_real_alertmanager_fires_and_resolves_one_alert(am_env: Env, tmp_path: Path) -> None:
    manager = RealAlertmanager(tmp_path, am_env.server.url + "/alertmanager")
    annotations = {
        "summary": "KV cache is saturated: 98% used",
        "description": "vllm:kv_cache_usage_perc > 0.95",
    }
    try:
        manager.fire(KV_ALERT, annotations)
        [post] = am_env.slack.wait_for("chat.postMessage", 1, timeout=30)
        assert post["channel"] == ALERTS
        blocks = json.dumps(post["blocks"])
        assert "health.kv_cache_saturated" in blocks and "--gpu-memory-utilization" in blocks  # the answer
        assert "meta-llama/Llama-3.1-8B-Instruct" in blocks and ACTION_ACK in blocks
        [incident] = am_env.history.history()
        assert incident.signature_id == "alertmanager.vllmkvcachesaturated" and incident.status == "open"
        assert incident.target.startswith("am:")

        manager.fire(KV_ALERT, annotations, ends=datetime.now(UTC) - timedelta(seconds=1))
        [update] = am_env.slack.wait_for("chat.update", 1, timeout=30)
        posted = am_env.history.find_posted(incident_id=incident.id, kind="alertmanager_alert")
        assert (update["channel"], update["ts"]) == (ALERTS, posted.ts)  # the edit is of that post
        assert "resolved" in update["text"].lower()
        assert wait_until(lambda: am_env.history.history()[0].status == "resolved", 10)
    finally:
        output = manager.stop()
    am_env.settle()
    assert len(_top_level_alert_posts(am_env)) == 1, output[-2000:]
    assert len(am_env.slack.bodies("chat.update")) == 1
    assert len(am_env.history.history()) == 1
