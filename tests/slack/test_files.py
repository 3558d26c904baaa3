"""Attached logs: read with files.info and the bot token, bounded in size, text only, refusals explained."""

from __future__ import annotations

import json

from tests.support.slack_env import KV_ERROR, Env
from triage_bot.testing import slack_requests as req

LOG = (
    "INFO 05-13 10:46:40 [api_server.py:1] vLLM API server version 0.9.1\n" * 20 + KV_ERROR + "\n"
).encode()


def test_an_attached_log_is_read_and_answered_in_the_thread(env: Env) -> None:
    attached = env.slack.add_file(LOG, name="engine.log")
    env.event(req.message("", files=[attached], ts="1700000000.000500"))
    env.settle()
    [post] = env.posts()
    assert post["thread_ts"] == "1700000000.000500"
    assert "No memory for KV cache blocks (" in post["text"]
    [info] = env.slack.bodies("files.info")
    assert info["file"] == attached["id"]
    [download] = env.slack.calls("download")
    assert download.headers["authorization"] == f"Bearer {env.slack.bot_token}"


def _mention_with(env: Env, attached: dict) -> dict:
    env.event(req.app_mention("what is this?", files=[attached], bot_user_id=env.slack.bot_user_id))
    env.settle()
    [post] = env.posts()
    return post


def test_a_binary_file_gets_a_clear_answer(env: Env) -> None:
    attached = env.slack.add_file(
        b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8,
        name="core.dump",
        mimetype="text/plain",
        filetype="text",
    )  # a type that lies: the bytes tell
    post = _mention_with(env, attached)
    assert post["text"] == "No known signature matched this paste."
    assert "`core.dump`: it is a binary file, not text" in json.dumps(post["blocks"])
    env.slack.clear()
    env.event(req.app_mention("", files=[attached], bot_user_id=env.slack.bot_user_id))
    env.settle()
    [post] = env.posts()
    assert post["text"].startswith("I could not read the attachment. — `core.dump`: it is a binary file")


def test_a_file_of_a_non_text_type_is_not_downloaded(env: Env) -> None:
    attached = env.slack.add_file(b"\x89PNG\r\n", name="screenshot.png", mimetype="image/png", filetype="png")
    post = _mention_with(env, attached)
    assert "it is a image/png file, not text" in json.dumps(post["blocks"])
    assert env.slack.calls("download") == []


def test_an_oversized_file_gets_a_clear_answer_and_is_not_downloaded(env: Env) -> None:
    attached = env.slack.add_file(LOG, name="huge.log", size=50 * 1024 * 1024)
    post = _mention_with(env, attached)
    assert "`huge.log`: the file is 50.0 MB; the bot reads files up to 2.0 MB." in json.dumps(post["blocks"])
    assert env.slack.calls("download") == []


def test_a_file_larger_than_slack_said_is_cut_off_while_streaming(make_env) -> None:
    env = make_env(file_max_bytes=1024)
    attached = env.slack.add_file(LOG * 10, name="liar.log", size=100)
    post = _mention_with(env, attached)
    assert "the file is larger than 1.0 KB, the most the bot reads" in json.dumps(post["blocks"])


def test_unreadable_files_in_a_channel_stay_silent(env: Env) -> None:
    env.event(req.message("", files=[env.slack.add_file(b"\x00\x01" * 100, name="x.bin")]))
    env.event(req.message("", files=[env.slack.add_file(LOG, name="big.log", size=10**9)]))
    env.settle()
    assert env.posts() == []


def test_a_paste_with_a_file_combines_both(env: Env) -> None:
    attached = env.slack.add_file(LOG, name="engine.log")
    env.event(
        req.app_mention("it died again, log attached", files=[attached], bot_user_id=env.slack.bot_user_id)
    )
    env.settle()
    [post] = env.posts()
    assert "No memory for KV cache blocks (" in post["text"]
