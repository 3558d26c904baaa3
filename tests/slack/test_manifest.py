"""manifest.yml matches what the app registers: events, command, shortcut, buttons, scopes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.support.slack_env import Env
from triage_bot.slack.blocks import ALL_ACTIONS
from triage_bot.testing import slack_requests as req

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"

# a listener for Events API type → the subscriptions that deliver it
SUBSCRIPTIONS = {
    "message": {"message.channels", "message.groups", "message.im", "message.mpim"},
    "app_mention": {"app_mention"},
    "app_home_opened": {"app_home_opened"},
}
SCOPE_FOR_SUBSCRIPTION = {
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "message.mpim": "mpim:history",
    "app_mention": "app_mentions:read",
    "app_home_opened": None,
}
# chat.postMessage/postEphemeral/update, /triage and the shortcut, files.info + url_private, files_upload_v2
CALL_SCOPES = {"chat:write", "commands", "files:read", "files:write"}
CHANNEL_TYPE = {
    "message.channels": "channel",
    "message.groups": "group",
    "message.im": "im",
    "message.mpim": "mpim",
}


@pytest.fixture(scope="module")
def manifest() -> dict:
    return yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))


def test_the_manifest_subscribes_to_exactly_what_the_app_handles(env: Env, manifest: dict) -> None:
    surfaces = env.bot.deps.surfaces
    settings, features = manifest["settings"], manifest["features"]
    expected_events = set().union(*(SUBSCRIPTIONS[e] for e in surfaces.events))
    assert set(settings["event_subscriptions"]["bot_events"]) == expected_events
    assert {c["command"] for c in features["slash_commands"]} == surfaces.commands
    assert {(s["callback_id"], s["type"]) for s in features["shortcuts"]} == {
        (c, "message") for c in surfaces.shortcuts
    }
    assert settings["interactivity"]["is_enabled"] is bool(
        surfaces.actions or surfaces.views or surfaces.shortcuts
    )
    assert surfaces.actions == set(ALL_ACTIONS)
    assert features["app_home"]["home_tab_enabled"] is ("app_home_opened" in surfaces.events)
    scopes = {SCOPE_FOR_SUBSCRIPTION[s] for s in expected_events} - {None} | CALL_SCOPES
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == scopes


def test_the_manifest_keeps_slacks_field_limits(manifest: dict) -> None:
    info, bot_user = manifest["display_information"], manifest["features"]["bot_user"]
    assert len(info["name"]) <= 35 and len(info["description"]) <= 140
    assert re.fullmatch(r"[\w\-.]{1,80}", bot_user["display_name"])
    for command in manifest["features"]["slash_commands"]:
        assert command["command"].startswith("/") and len(command["command"]) <= 32 and command["description"]
    for url in (
        manifest["settings"]["event_subscriptions"]["request_url"],
        manifest["settings"]["interactivity"]["request_url"],
    ):
        assert url.endswith("/slack/events")


def test_every_subscribed_event_reaches_a_listener(env: Env, manifest: dict) -> None:
    for subscription in manifest["settings"]["event_subscriptions"]["bot_events"]:
        if subscription in CHANNEL_TYPE:
            event = req.message("hello", channel_type=CHANNEL_TYPE[subscription])
        elif subscription == "app_mention":
            event = req.app_mention("hello", bot_user_id=env.slack.bot_user_id)
        else:
            event = req.app_home_opened()
        assert env.event(event).status == 200, subscription
    # and the check means something: an event nothing listens to is a 404 (which Slack would retry)
    unhandled = env.send.event(
        req.event_callback({"type": "reaction_added", "user": "U1", "reaction": "eyes"})
    )
    assert unhandled.status == 404
    for action_id in ALL_ACTIONS:
        sent = env.send.interactive(
            req.block_action(
                action_id, json.dumps({"i": None, "s": None}), response_url=env.slack.response_url()
            )
        )
        assert sent.status == 200, action_id
    env.settle()
