"""Posting the digest: the message in the digest channel, the chart uploaded in its thread.

The upload uses files_upload_v2 (files.getUploadURLExternal, the upload, then
files.completeUploadExternal); the old files.upload is gone. A failed chart upload does not
take the message with it: the numbers are already posted, and the failure is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.digest import build_digest, digest_blocks, digest_text, render_png

log = logging.getLogger(__name__)


def post_digest(client: Any, channel: str, digest: Any, *, with_chart: bool = True) -> dict[str, Any]:
    response = client.chat_postMessage(channel=channel, text=digest_text(digest), blocks=digest_blocks(digest),
                                       unfurl_links=False, unfurl_media=False)
    result: dict[str, Any] = {"channel": response["channel"], "ts": response["ts"], "chart": None}
    if with_chart:
        try:
            png = render_png(digest)
            upload = client.files_upload_v2(
                channel=response["channel"], thread_ts=response["ts"], file=png,
                filename=f"digest-{digest.days[0]:%Y-%m-%d}.png", title="Weekly incident digest",
                alt_txt="Charts: incidents per day by engine, top signatures, new vs recurring, MTTA/MTTR, trend, uptime",
            )
            result["chart"] = (upload.get("file") or {}).get("id") or True
        except Exception as exc:
            log.warning("digest: chart upload failed (the message is posted): %s", exc)
    return result


def post_weekly_digest(store: Any, *, days: int = 7, tz: str = "UTC", environ: Mapping[str, str] | None = None,
                       end: datetime | None = None, client: Any = None, channel: str | None = None) -> dict[str, Any]:
    """Build the digest for the last `days` local days and post it to TRIAGE_DIGEST_CHANNEL."""
    if client is None or channel is None:
        from bot.slack.client import web_client
        from bot.slack.config import SlackConfig

        config = SlackConfig.from_env(environ)
        client = client or web_client(config)
        channel = channel or config.digest_channel
    if not channel:
        raise ValueError("no digest channel (TRIAGE_DIGEST_CHANNEL)")
    digest = build_digest(store, end=end, days=days, tz=tz)
    result = post_digest(client, channel, digest)
    try:
        store.record_posted(result["channel"], result["ts"], "digest")
    except Exception as exc:
        log.warning("digest: could not remember the posted digest: %s", exc)
    return result
