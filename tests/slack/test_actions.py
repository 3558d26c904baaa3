"""Buttons on answers: Acknowledge (anyone), Resolved (admins), Wrong match (a modal, then feedback), Helpful."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from tests.support.slack_env import ADMIN, ALICE, CHANNEL, KV_ERROR, Env
from triage_bot.history.models import Feedback
from triage_bot.slack.blocks import ACTION_ACK, ACTION_DETAILS, ACTION_HELPFUL, ACTION_RESOLVE, ACTION_WRONG
from triage_bot.slack.modals import (
    ACTION_NOTE,
    ACTION_PICK,
    BLOCK_NOTE,
    BLOCK_PICK,
    RESOLVE_VIEW,
    WRONG_MATCH_VIEW,
)
from triage_bot.testing import slack_requests as req


def _posted_answer(env: Env) -> dict:
    env.event(req.message(KV_ERROR))
    env.settle()
    [post] = env.posts()
    return post


def _feedback(env: Env) -> list[tuple[int, str, str, str | None]]:
    with env.history.session_factory() as session:
        rows = session.scalars(select(Feedback).order_by(Feedback.id))
        return [(f.incident_id, f.user_id, f.kind, f.correct_signature_id) for f in rows]


def _click_on(env: Env, post: dict, action_id: str, user: str, message_ts: str = "1700000000.000900") -> None:
    value = next(e["value"] for e in post["blocks"][-1]["elements"] if e["action_id"] == action_id)
    env.click(
        action_id,
        value,
        user=user,
        message_ts=message_ts,
        message={
            "type": "message",
            "ts": message_ts,
            "text": post["text"],
            "blocks": post["blocks"],
        },
    )
    env.settle()


def _resolve_note(env: Env, note: str | None, user: str = ADMIN) -> None:
    """Submit the Resolve modal that the button opened, with `note` in its text box."""
    [opened] = env.slack.bodies("views.open")
    view = opened["view"]
    values = {BLOCK_NOTE: {ACTION_NOTE: {"type": "plain_text_input", "value": note}}}
    sent = env.send.interactive(
        req.view_submission(RESOLVE_VIEW, values, private_metadata=view["private_metadata"], user=user)
    )
    assert sent.status == 200 and sent.body == ""  # closes the modal
    env.settle()


def test_resolved_asks_how_it_was_fixed_then_closes_the_incident_and_updates_the_answer(env: Env) -> None:
    post = _posted_answer(env)
    posted_ts = env.slack.messages[CHANNEL][0]["ts"]
    _click_on(env, {**post, "ts": posted_ts}, ACTION_RESOLVE, ADMIN, message_ts=posted_ts)
    [opened] = env.slack.bodies("views.open")
    assert (opened["view"]["callback_id"], opened["view"]["title"]["text"]) == (RESOLVE_VIEW, "Resolve #1")
    assert env.history.get_incident(1).status == "open"  # nothing changes until the modal is sent
    _resolve_note(env, "lowered --gpu-memory-utilization to 0.85 <!channel> *now*")
    incident = env.history.get_incident(1)
    assert incident.status == "resolved" and incident.resolved_by == ADMIN
    assert incident.resolution == "lowered --gpu-memory-utilization to 0.85 <!channel> *now*"
    assert _feedback(env) == [(1, ADMIN, "resolved", None)]
    [update] = env.slack.bodies("chat.update")
    assert (update["channel"], update["ts"]) == (CHANNEL, posted_ts)
    assert update["blocks"][:-1] == post["blocks"][:-1]  # the same answer, its buttons gone
    note = update["blocks"][-1]["elements"][0]["text"]
    assert note.startswith(f":white_check_mark: Resolved by <@{ADMIN}> on ")
    # how it was fixed, as inert text: no live mention
    assert note.endswith("(incident #1): lowered --gpu-memory-utilization to 0.85 &lt;!channel&gt; *now*"), (
        note
    )


def test_resolved_without_a_note_still_resolves(env: Env) -> None:
    post = _posted_answer(env)
    _click_on(env, post, ACTION_RESOLVE, ADMIN)
    _resolve_note(env, None)
    assert env.history.get_incident(1).status == "resolved"
    assert env.history.get_incident(1).resolution is None


def test_when_the_modal_cannot_open_the_click_resolves_at_once(env: Env) -> None:
    post = _posted_answer(env)
    env.slack.fail("views.open", status=200, error="expired_trigger_id")
    _click_on(env, post, ACTION_RESOLVE, ADMIN)
    [update] = env.slack.bodies("chat.update")
    assert (update["channel"], update["ts"], update["text"]) == (CHANNEL, "1700000000.000900", post["text"])
    assert (
        update["blocks"][:-1] == post["blocks"][:-1]
    )  # same answer, the buttons replaced by who resolved it
    assert update["blocks"][-1]["elements"][0]["text"].startswith(
        f":white_check_mark: Resolved by <@{ADMIN}> on "
    )
    assert env.history.get_incident(1).status == "resolved"
    assert _feedback(env) == [(1, ADMIN, "resolved", None)]


def test_a_resolve_submission_from_someone_who_is_not_an_admin_changes_nothing(env: Env) -> None:
    post = _posted_answer(env)
    _click_on(env, post, ACTION_RESOLVE, ADMIN)
    _resolve_note(env, "forged", user=ALICE)
    assert env.history.get_incident(1).status == "open"


def test_acknowledge_records_who_and_when_shows_it_and_fills_the_digests_mtta(env: Env) -> None:
    post = _posted_answer(env)
    _click_on(env, post, ACTION_ACK, ALICE)
    [update] = env.slack.bodies("chat.update")
    assert update["blocks"][:-2] == post["blocks"][:-1]  # the answer itself is unchanged
    buttons = [e["action_id"] for e in update["blocks"][-2]["elements"]]
    assert ACTION_ACK not in buttons and ACTION_RESOLVE in buttons  # Resolved is still there
    assert update["blocks"][-1]["elements"][0]["text"].startswith(f":eyes: Acknowledged by <@{ALICE}> on ")
    incident = env.history.get_incident(1)
    assert (incident.status, incident.acknowledged_by) == ("acknowledged", ALICE)
    now = datetime.now(UTC)
    numbers = env.history.digest_numbers(now - timedelta(days=1), now + timedelta(minutes=1))
    assert numbers.mtta_samples == 1 and numbers.mtta_seconds is not None and numbers.mtta_seconds >= 0

    _click_on(env, post, ACTION_ACK, ADMIN)  # a second click (a stale copy of the message)
    assert len(env.slack.bodies("chat.update")) == 1
    assert env.responses()[-1]["text"] == "Incident #1 was already acknowledged."
    assert env.history.get_incident(1).acknowledged_by == ALICE


def test_anyone_else_gets_a_polite_refusal_only_they_see(env: Env) -> None:
    post = _posted_answer(env)
    _click_on(env, post, ACTION_RESOLVE, ALICE)
    [refusal] = env.responses()
    assert refusal["response_type"] == "ephemeral" and refusal["replace_original"] is False
    assert refusal["text"].startswith("Sorry, only the bot's admins can do that.")
    assert env.slack.bodies("chat.update") == []
    assert env.history.get_incident(1).status == "open"


def test_helpful_is_recorded_and_thanked(env: Env) -> None:
    post = _posted_answer(env)
    _click_on(env, post, ACTION_HELPFUL, ALICE)
    assert _feedback(env) == [(1, ALICE, "helpful", None)]
    assert env.responses()[-1]["text"] == "Thanks, noted that this answer helped."


def test_wrong_match_opens_a_modal_and_records_the_right_signature(env: Env) -> None:
    post = _posted_answer(env)
    _click_on(env, post, ACTION_WRONG, ALICE)
    [opened] = env.slack.bodies("views.open")
    view = opened["view"]
    assert opened["trigger_id"].endswith(".trigger")
    assert (view["type"], view["callback_id"], view["title"]["text"]) == (
        "modal",
        WRONG_MATCH_VIEW,
        "Wrong match",
    )
    options = [
        o["value"] for group in view["blocks"][1]["element"]["option_groups"] for o in group["options"]
    ]
    assert "vllm.kv_cache_no_memory" not in options  # not the one it already said
    assert {"none", "vllm.engine_core_dead", "component.lora"} <= set(options)
    metadata = json.loads(view["private_metadata"])
    assert (metadata["i"], metadata["s"], metadata["c"]) == (1, "vllm.kv_cache_no_memory", CHANNEL)

    values = {
        BLOCK_PICK: {
            ACTION_PICK: {"type": "static_select", "selected_option": {"value": "vllm.engine_core_dead"}}
        }
    }
    sent = env.send.interactive(
        req.view_submission(WRONG_MATCH_VIEW, values, private_metadata=view["private_metadata"], user=ALICE)
    )
    assert sent.status == 200 and sent.body == ""  # closes the modal
    env.settle()
    assert _feedback(env) == [(1, ALICE, "wrong_match", "vllm.engine_core_dead")]
    assert env.responses()[-1]["text"] == "Thanks, recorded. — You said it was `vllm.engine_core_dead`."


def test_details_shows_why_and_the_faq_only_to_whoever_asked(env: Env) -> None:
    post = _posted_answer(env)
    assert "*Why*" not in json.dumps(post["blocks"])  # the answer itself stays short
    _click_on(env, post, ACTION_DETAILS, ALICE)
    [details] = env.responses()
    assert details["response_type"] == "ephemeral" and details["replace_original"] is False
    shown = json.dumps(details["blocks"])
    sig = env.bot.deps.job.triager.kb.get("vllm.kv_cache_no_memory")
    assert "*Why*" in shown and sig.title in shown
    assert env.slack.bodies("chat.update") == []  # nothing changes for the others
