"""The weekly digest: numbers from the history, Block Kit from a sandboxed template, a PNG chart.

    digest = build_digest(store, days=7, tz="Europe/Berlin")
    blocks = digest_blocks(digest); png = render_png(digest)

`triage_bot.slack.outputs.post_digest` posts it (chat.postMessage through the delivery path, then the
chart with files_upload_v2 in its thread); `/triage digest` and `triage-bot digest --dry-run` use
the same three calls.
"""

from triage_bot.blockkit import limit_problems
from triage_bot.digest.builder import Digest, build_digest
from triage_bot.digest.message import digest_blocks, digest_text

__all__ = ["Digest", "build_digest", "digest_blocks", "digest_text", "limit_problems", "render_png"]


def render_png(digest: Digest) -> bytes:
    """The chart (imports matplotlib only when a chart is wanted). Engine colours follow the
    knowledge base's engine order, so that an engine keeps its colour from week to week."""
    from triage_bot.digest.chart import render_png as render
    from triage_bot.kb import loader

    engines = loader.load().engines
    return render(digest, known=sorted(engines, key=lambda e: (engines[e].order, e)))
