"""What the scheduled jobs write to Slack (alerts, resolutions, the digest), through `Delivery`.

The core's health monitor and digest know a `Notifier` and a digest poster, never Slack. These
implementations send through the same delivery path as every answer: a passing failure waits in
the outbox and is retried until it lands (an alert's resolution edit and its thread reply
included), Retry-After is honoured and channels are paced. Only the first post of an alert is
sent without the outbox: the monitor tries it again on its next check, and only a post that
landed gives the message whose edits follow.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from triage_bot.blockkit import escape
from triage_bot.health.alerts import Alert, MessageRef
from triage_bot.slack.alerts import _duration, alert_blocks, alert_text
from triage_bot.slack.config import SlackConfig
from triage_bot.slack.delivery import Delivery, Failure

if TYPE_CHECKING:
    from triage_bot.digest import Digest
    from triage_bot.history import HistoryStore
    from triage_bot.scheduler.wiring import Outputs

log = logging.getLogger(__name__)


class SlackNotifier:
    """The health monitor's Notifier: one message per incident in the alert channel."""

    def __init__(self, delivery: Delivery, channel: str):
        if not channel:
            raise ValueError("an alert channel is required (TRIAGE_ALERT_CHANNEL)")
        self.delivery = delivery
        self.channel = channel

    def post(self, alert: Alert) -> MessageRef | None:
        response = self.delivery.call(
            "chat.postMessage",
            keep=False,
            channel=self.channel,
            text=alert_text(alert),
            blocks=alert_blocks(alert),
            unfurl_links=False,
            unfurl_media=False,
            link_names=False,
        )
        if not response or isinstance(response, Failure):
            return None  # the monitor posts it again on its next check
        return MessageRef(response["channel"], response["ts"])

    def update(self, ref: MessageRef, alert: Alert) -> None:
        self.delivery.call(
            "chat.update", channel=ref.channel, ts=ref.ts, text=alert_text(alert), blocks=alert_blocks(alert)
        )

    def resolve(self, ref: MessageRef, alert: Alert) -> None:
        self.update(ref, alert)
        took = _duration(((alert.resolved_at or alert.opened_at) - alert.opened_at).total_seconds())
        self.delivery.post(
            ref.channel,
            {"text": escape(f"Resolved after {took}: {alert.resolution}")},
            thread_ts=ref.ts,
            key=f"resolved:{ref.channel}:{ref.ts}",
        )


def post_digest(
    delivery: Delivery, channel: str, digest: Digest, store: HistoryStore | None = None
) -> dict[str, Any]:
    """Post a built digest through `delivery`, the chart in its thread; remember it in `store`."""
    from triage_bot.digest import digest_blocks, digest_text, render_png

    key = f"digest:{channel}:{digest.days[0]:%Y-%m-%d}:{len(digest.days)}"
    response = delivery.post(channel, {"text": digest_text(digest), "blocks": digest_blocks(digest)}, key=key)
    result: dict[str, Any] = {"channel": channel, "ts": None, "chart": None}
    if not response or isinstance(response, Failure):
        return result  # a passing failure: the message waits in the outbox (the chart is left out)
    result["channel"], result["ts"] = response["channel"], response["ts"]
    try:
        upload = delivery.client.files_upload_v2(
            channel=response["channel"],
            thread_ts=response["ts"],
            file=render_png(digest),
            filename=f"digest-{digest.days[0]:%Y-%m-%d}.png",
            title="Weekly incident digest",
            alt_txt="Charts: incidents per day by engine, top signatures, new vs recurring, MTTA/MTTR, trend, uptime",
        )
        result["chart"] = (upload.get("file") or {}).get("id") or True
    except Exception as exc:
        log.warning("digest: chart upload failed (the message is posted): %s", exc)
    if store is not None:
        try:
            store.record_posted(response["channel"], response["ts"], "digest")
        except Exception as exc:
            log.warning("digest: could not remember the posted digest: %s", exc)
    return result


def digest_poster(
    delivery: Delivery, channel: str, store: HistoryStore, *, days: int, tz: str
) -> Callable[[], dict[str, Any]]:
    """The weekly digest job: build the digest of the last `days` local days and post it."""
    from triage_bot.digest import build_digest

    if not channel:
        raise ValueError("no digest channel (TRIAGE_DIGEST_CHANNEL)")

    def post() -> dict[str, Any]:
        return post_digest(delivery, channel, build_digest(store, days=days, tz=tz), store)

    return post


def scheduler_outputs(
    environ: Mapping[str, str] | None = None,
    delivery: Delivery | None = None,
    store: HistoryStore | None = None,
) -> Outputs:
    """The notifier and digest poster for `build_scheduler`, from SLACK_BOT_TOKEN and the channels.

    `delivery` is the Slack app's own (so the scheduler shares its outbox and pacing); a process
    without the app builds one on the history's database."""
    config = SlackConfig.from_env(environ)
    if not config.bot_token:
        return {}
    if delivery is None:
        from triage_bot.slack.client import web_client
        from triage_bot.slack.outbox import SlackStore

        slack_store = SlackStore(store.session_factory) if store is not None else None
        delivery = Delivery(config, slack_store, web_client(config))
    outputs: Outputs = {}
    if config.alert_channel:
        outputs["notifier"] = SlackNotifier(delivery, config.alert_channel)
    if config.digest_channel and store is not None:
        from triage_bot.scheduler import SchedulerSettings

        settings = SchedulerSettings.from_env(environ)
        outputs["digest_poster"] = digest_poster(
            delivery, config.digest_channel, store, days=settings.digest_days, tz=settings.timezone
        )
    return outputs
