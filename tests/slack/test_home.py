"""App Home: open incidents, engine health and the last digest, published on every open."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace

from tests.support.slack_env import ALICE, CHANNEL, KV_ERROR, Env, start_env, stop_env
from triage_bot.slack.integrations import Integrations
from triage_bot.testing import slack_requests as req


def test_home_shows_open_incidents_and_says_what_is_missing(env: Env) -> None:
    env.event(req.message(KV_ERROR))
    env.settle()
    env.event(req.app_home_opened(ALICE))
    env.settle()
    [published] = env.slack.bodies("views.publish")
    assert published["user_id"] == ALICE
    view = published["view"]
    assert view["type"] == "home" and len(view["blocks"]) <= 100
    text = json.dumps(view["blocks"], ensure_ascii=False)
    assert "`#1` `vllm.kv_cache_no_memory` · vllm · 1× since " in text and f"<#{CHANNEL}>" in text
    assert "Health checks are not available in this build" in text
    assert "No digest yet" in text


def test_home_with_engines_and_a_digest(slack, triager, history) -> None:
    checked = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    engines = [SimpleNamespace(name="llama-prod", kind="vllm", state="up", checked_at=checked, detail="")]
    env = start_env(
        slack, triager, history, integrations=Integrations(lambda: engines, lambda: "3 incidents, 1 new")
    )
    try:
        env.event(req.app_home_opened(ALICE))
        env.settle()
        text = json.dumps(slack.bodies("views.publish")[0]["view"], ensure_ascii=False)
        assert ":large_green_circle: *llama-prod* · vllm · up · checked 2026-11-02 09:00 UTC" in text
        assert "3 incidents, 1 new" in text and "No open incidents. :tada:" in text
    finally:
        stop_env(env)
