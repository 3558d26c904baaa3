"""`/triage` and every subcommand: ephemeral answers through response_url, the share button, admins."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests.support.slack_env import ADMIN, ALICE, CHANNEL, KV_ERROR, Env, start_env, stop_env
from triage_bot.slack.blocks import ACTION_POST, answer_message, with_share_button
from triage_bot.slack.integrations import Integrations
from triage_bot.testing import slack_requests as req


def _only_response(env: Env) -> dict:
    env.settle()
    [response] = env.responses()
    assert response["response_type"] == "ephemeral"
    return response


def _text(response: dict) -> str:
    return json.dumps(response["blocks"], ensure_ascii=False)


def test_triage_text_is_answered_ephemerally_with_a_post_button(env: Env) -> None:
    env.slack.hold("response_url")
    try:
        sent = env.command(KV_ERROR)
        assert sent.body == "" and env.responses() == []  # acked before the answer could land
    finally:
        env.slack.release("response_url")
    response = _only_response(env)
    share = json.loads(response["blocks"][-1]["elements"][-1]["value"])["k"]
    expected = with_share_button(
        answer_message(env.bot.deps.job.triager.triage(KV_ERROR), incident_id=1), share
    )
    assert response == {
        "response_type": "ephemeral",
        "replace_original": False,
        "text": expected.text,
        "blocks": expected.blocks,
    }
    assert [e["action_id"] for e in response["blocks"][-1]["elements"]] == [
        "triage_acknowledge",
        "triage_resolve",
        "triage_wrong_match",
        "triage_helpful",
        "triage_details",
        ACTION_POST,
    ]
    assert env.posts() == []  # nothing in the channel until the user asks


def test_post_to_channel_posts_what_the_user_saw_and_removes_the_ephemeral(env: Env) -> None:
    env.command(KV_ERROR)
    response = _only_response(env)
    value = response["blocks"][-1]["elements"][-1]["value"]
    env.click(ACTION_POST, value, ephemeral=True, user=ALICE)
    env.settle()
    [post] = env.posts()
    assert post["channel"] == CHANNEL and "thread_ts" not in post
    assert post["blocks"][0] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": f"Shared by <@{ALICE}> from `/triage`"}],
    }
    assert post["blocks"][1:-1] == response["blocks"][:-1]
    assert [e["action_id"] for e in post["blocks"][-1]["elements"]] == [
        "triage_acknowledge",
        "triage_resolve",
        "triage_wrong_match",
        "triage_helpful",
        "triage_details",
    ]
    assert env.responses()[-1] == {"delete_original": True}


def test_post_to_a_channel_the_bot_is_not_in_explains_how_to_invite_it(env: Env) -> None:
    env.slack.not_in_channels.add(CHANNEL)
    env.command("help")
    value = _only_response(env)["blocks"][-1]["elements"][-1]["value"]
    env.click(ACTION_POST, value, ephemeral=True)
    env.settle()
    assert env.posts() == []
    assert env.responses()[-1]["text"].startswith("I can't post in this channel yet.")


@pytest.mark.parametrize("text", ["", "help", "histroy", "Help"])
def test_help_and_unknown_subcommands_get_help(env: Env, text: str) -> None:
    env.command(text)
    response = _only_response(env)
    assert response["text"].startswith("triage-bot")
    body = _text(response)
    for sub in (
        "history [engine] [days]",
        "status",
        "digest",
        "faq &lt;question&gt;",
        "engines [what you have and need]",
        "search &lt;words&gt;",
        "resolve &lt;incident&gt; [how it was fixed]",
        "mute &lt;signature|engine&gt; &lt;duration&gt;",
    ):
        assert f"`/triage {sub}`" in body
    assert ("I don't know the subcommand `histroy`." in body) == (text == "histroy")


def test_history_lists_recent_incidents(env: Env) -> None:
    env.event(req.message(KV_ERROR))
    env.settle()
    env.command("history vllm 30")
    body = _text(_only_response(env))
    assert "Incidents on vllm in the last 30 days" in body
    assert "`#1` `vllm.kv_cache_no_memory` · vllm · *open* · 1×" in body and f"<#{CHANNEL}>" in body
    env.slack.clear()
    env.command("history sglang")
    assert "None. :tada:" in _text(_only_response(env))
    env.slack.clear()
    env.command("history bogus")  # a typo is not "no incidents"
    body = _text(_only_response(env))
    assert "No engine `bogus`" in body and "`vllm`" in body and "None. :tada:" not in body


def test_status_and_digest_say_plainly_when_there_is_nothing(env: Env) -> None:
    env.command("status")
    assert "Health checks are not available in this build" in _text(_only_response(env))
    env.slack.clear()
    env.command("digest")
    assert "No digest yet" in _text(_only_response(env))


def test_status_and_digest_show_what_the_hooks_give(slack, triager, history) -> None:
    engines = [
        SimpleNamespace(name="llama-prod", kind="vllm", state="down", checked_at=None, detail="HTTP 503")
    ]
    digest = SimpleNamespace(text="*12 incidents* this week <!channel>", created_at=None)
    env = start_env(slack, triager, history, integrations=Integrations(lambda: engines, lambda: digest))
    try:
        env.command("status")
        assert ":red_circle: *llama-prod* · vllm · down — HTTP 503" in _text(_only_response(env))
        env.slack.clear()
        env.command("digest")
        body = _text(_only_response(env))
        assert "*12 incidents* this week &lt;!channel&gt;" in body
        empty = start_env(slack, triager, history, integrations=Integrations(lambda: [], lambda: None))
        try:
            env.slack.clear()
            empty.command("status")
            empty.settle()
            assert "No engines configured" in _text(slack.bodies("response_url")[0])
        finally:
            stop_env(empty)
    finally:
        stop_env(env)


def test_faq_engines_and_search(env: Env) -> None:
    env.command("faq what does gpu memory utilization mean")
    assert "The fraction of total GPU memory one vLLM instance may use." in _text(_only_response(env))
    env.slack.clear()
    env.command("engines")
    assert "*KV cache management*" in _text(_only_response(env))
    env.slack.clear()
    env.command("search kv cache memory")
    assert "`vllm.kv_cache_no_memory` No memory for KV cache blocks" in _text(_only_response(env))


def test_a_question_after_the_command_gets_the_faq_and_records_nothing(env: Env) -> None:
    env.command("what does gpu-memory-utilization mean?")
    assert "The fraction of total GPU memory one vLLM instance may use." in _text(_only_response(env))
    assert env.history.get_incident(1) is None  # a question is not an incident


def test_resolve_and_mute_are_for_admins_only(env: Env) -> None:
    env.event(req.message(KV_ERROR))
    env.settle()
    for text in ("resolve 1", "mute vllm 2h", "unmute 1"):
        env.slack.clear()
        env.command(text, user=ALICE)
        response = _only_response(env)
        assert response["text"].startswith("Sorry, only the bot's admins can do that.")
    assert env.history.get_incident(1).status == "open"
    assert env.history.active_mutes() == []


def test_an_admin_resolves_an_incident(env: Env) -> None:
    env.event(req.message(KV_ERROR))
    env.settle()
    env.command("resolve #1", user=ADMIN)
    assert _only_response(env)["text"].startswith("Incident #1 resolved.")
    incident = env.history.get_incident(1)
    assert (incident.status, incident.resolved_by) == ("resolved", ADMIN)
    for text, expected in (
        ("resolve 1", "Incident #1 was already resolved."),
        ("resolve 99", "There is no incident #99."),
        ("resolve soon", "Which incident?"),
    ):
        env.slack.clear()
        env.command(text, user=ADMIN)
        assert _only_response(env)["text"].startswith(expected)


def test_an_admin_mutes_a_signature_or_an_engine(env: Env) -> None:
    env.command("mute vllm.kv_cache_no_memory 90m", user=ADMIN)
    assert _only_response(env)["text"].startswith("Muted `vllm.kv_cache_no_memory` for 1.5 hours.")
    env.slack.clear()
    env.command("mute sglang 2d", user=ADMIN)
    assert _only_response(env)["text"].startswith("Muted engine `sglang` for 2 days.")
    mutes = {(m.signature_id, m.engine) for m in env.history.active_mutes()}
    assert mutes == {("vllm.kv_cache_no_memory", None), (None, "sglang")}
    for text, expected in (
        ("mute vllm.nope 1h", "No signature `vllm.nope`"),
        ("mute vllm forever", "That duration"),
        ("mute vllm", "What to mute"),
    ):
        env.slack.clear()
        env.command(text, user=ADMIN)
        assert _only_response(env)["text"].startswith(expected)


def test_the_command_text_is_echoed_inert(env: Env) -> None:
    env.command("<!here> {{7*7}} &lt;b&gt; " + KV_ERROR)
    raw = json.dumps(_only_response(env))
    assert "<!here>" not in raw and "{{7*7}}" in raw and "&lt;b&gt;" in raw and "49" not in raw


@pytest.mark.parametrize("duration", ["99999999w", "400d", "0h", "-3h"])
def test_an_absurd_mute_gets_a_usage_line_not_a_raw_error(make_env, duration: str) -> None:
    env = make_env()
    env.command(f"mute vllm {duration}", user=ADMIN)
    text = _text(_only_response(env))
    assert "That duration was not understood" in text and "up to a year" in text
    assert "out of range" not in text and "Error" not in text


def test_a_storage_failure_shows_no_internal_address(make_env, monkeypatch) -> None:
    env = make_env()

    def down(*_args, **_kwargs):
        raise RuntimeError('connection to server at "10.0.3.7", port 5432 failed: Connection refused')

    monkeypatch.setattr(env.history, "history", down)
    env.command("history")
    text = _text(_only_response(env))
    assert "cannot be read right now" in text and "Try again in a minute" in text
    assert "10.0.3.7" not in text and "5432" not in text and "Connection refused" not in text


def test_mutes_are_listed_and_an_admin_ends_one(env: Env) -> None:
    env.command("mutes")
    assert "None: every failure is answered" in _text(_only_response(env))
    env.slack.clear()
    env.command("mute sglang 2h", user=ADMIN)
    env.settle()
    env.slack.clear()
    [mute] = env.history.active_mutes()
    env.command("mutes", user=ALICE)  # anyone may look
    body = _text(_only_response(env))
    assert f"`#{mute.id}` engine `sglang`" in body and "unmute" in body
    env.slack.clear()
    env.command(f"unmute #{mute.id}", user=ADMIN)
    assert f"Mute #{mute.id} ended" in _text(_only_response(env))
    assert env.history.active_mutes() == []
    for text, expected in (
        (f"unmute {mute.id}", "is not in force"),
        ("unmute 999", "is not in force"),
        ("unmute sglang", "Which mute?"),
    ):
        env.slack.clear()
        env.command(text, user=ADMIN)
        assert expected in _text(_only_response(env)), text


def test_resolve_takes_the_resolved_button_off_the_posted_answer(env: Env) -> None:
    """After /triage resolve N the answer in the channel says who resolved it and offers no
    Resolved button (a live button on a closed incident misleads)."""
    env.event(req.message(KV_ERROR))
    env.settle()
    [posted] = env.slack.bodies("chat.postMessage")
    assert "triage_resolve" in json.dumps(posted["blocks"])
    env.command("resolve 1", user=ADMIN)
    env.settle()
    [update] = env.slack.bodies("chat.update")
    shown = json.dumps(update["blocks"])
    assert "triage_resolve" not in shown and f"Resolved by <@{ADMIN}>" in shown
    assert update["ts"] == env.slack.messages[CHANNEL][0]["ts"]


def test_slash_engines_recommends_in_slack(slack, history) -> None:
    from triage_bot.core import default_triager

    env = start_env(slack, default_triager(), history)  # the bundled knowledge, which has the guide
    try:
        env.command("engines MI300X multi-turn agents <!channel>")
        env.settle()
        [response] = env.responses()
        shown = json.dumps(response["blocks"])
        assert "Choose SGLang" in shown and "RadixAttention" in shown
        assert "TensorRT-LLM does not run on AMD GPUs (ROCm)" in shown
        assert "<!channel>" not in shown
    finally:
        stop_env(env)
