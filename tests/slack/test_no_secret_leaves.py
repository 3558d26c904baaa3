"""No secret leaves the paste it came in: not in the reply, the outbox, the shares, nor the answer.

Each of the 35 secret forms of tests/support/secrets.py is pasted on the very line the bot
matches, so it would be quoted back ("Matched") if nothing masked it.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from tests.support.secrets import SECRET_FORMS
from tests.support.slack_env import KV_ERROR, Env
from triage_bot.core import default_triager
from triage_bot.slack.outbox import outbox_table, shares_table
from triage_bot.testing import slack_requests as req

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free."


def _leaks(text: str) -> list[str]:
    """The secrets (or their second halves) that appear in `text`."""
    return [secret for _, secret in SECRET_FORMS if secret in text or secret[len(secret) // 2 :] in text]


@pytest.mark.parametrize(("line", "secret"), SECRET_FORMS, ids=[s[:12] for _, s in SECRET_FORMS])
def test_the_answer_masks_a_secret_on_the_matched_line(line: str, secret: str) -> None:
    answer = default_triager().triage(f"{line.splitlines()[0]} {OOM}\n{line}")
    assert answer.match is not None
    shown = json.dumps(answer.to_dict())
    assert secret not in shown and secret[len(secret) // 2 :] not in shown


def test_replies_never_quote_a_secret(env: Env) -> None:
    for n, (line, _) in enumerate(SECRET_FORMS):
        env.event(req.message(f"{line.splitlines()[0]} {KV_ERROR}", ts=f"1700000100.{n:06d}"))
    env.settle(60)
    posts = env.posts()
    assert len(posts) == len(SECRET_FORMS)
    assert _leaks(json.dumps(posts)) == []


def test_the_outbox_and_the_shares_store_no_secret(make_env) -> None:
    env = make_env(server_error_retries=0)  # no retries in the worker: straight to the outbox
    env.slack.fail("chat.postMessage", status=500, times=1000)  # every reply waits in the outbox
    for n, (line, _) in enumerate(SECRET_FORMS):
        paste = f"{line.splitlines()[0]} {KV_ERROR}"
        env.event(req.message(paste, ts=f"1700000200.{n:06d}"))
        env.command(paste)  # an ephemeral answer waits for its "Post to channel" button in slack_shares
    env.settle(60)
    with env.history.session_factory() as session:
        outbox = [json.dumps(row.payload) for row in session.execute(select(outbox_table))]
        shares = [json.dumps(row.message) for row in session.execute(select(shares_table))]
    assert outbox and shares
    assert _leaks("\n".join(outbox + shares)) == []
