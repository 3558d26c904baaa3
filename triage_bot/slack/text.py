"""Slack's wire text in, plain text to the core, escaped mrkdwn out.

Slack delivers message text in its wire form: `&`, `<`, `>` typed by a user arrive as `&amp;`,
`&lt;`, `&gt;`, and mentions, channels and links arrive as live `<…>` sequences. The core must
see what the user saw (a Python traceback's `<module>`, not `&lt;module&gt;`), and anything the
bot echoes back must never turn into a live mention. So text goes through `from_slack` on the
way in and `escape` on the way out; echoing a paste can then never ping `@channel`, `@here` or a
user, whatever it contains.
"""

from __future__ import annotations

import re

from triage_bot.blockkit import escape as escape  # part of this module's surface: text to mrkdwn

# <@U123>, <@U123|bob>, <#C123|general>, <!here>, <!subteam^S1|@team>, <http://x|label>, <mailto:…>
_ENTITY = re.compile(r"<([@#!]?)([^<>|]*)(?:\|([^<>]*))?>")
_TRUNCATION = "… (truncated)"


def _entity_text(match: re.Match[str]) -> str:
    sigil, target, label = match.group(1), match.group(2), match.group(3)
    if sigil == "@":
        return "@" + (label or target)
    if sigil == "#":
        return "#" + (label or target)
    if sigil == "!":
        # <!here>, <!channel>, <!subteam^S1|@team>, <!date^…|fallback>
        if label:
            return label
        return "@" + target.split("^", 1)[0]
    return label or target  # a link: show what the user saw


def from_slack(text: str) -> str:
    """The plain text a user saw for a message in Slack's wire form."""
    if not text:
        return ""
    text = _ENTITY.sub(_entity_text, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def code_safe(text: str) -> str:
    """Escape text for a ``` code block: also break a closing fence inside it."""
    return escape(text).replace("```", "`\u200b``")


def truncate(text: str, limit: int, marker: str = _TRUNCATION) -> str:
    """At most `limit` characters; a cut ends with a visible marker, never silently."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))].rstrip() + marker


def mentions_of(text: str) -> set[str]:
    """User ids mentioned in wire-form text (`<@U123>` → U123)."""
    return {m.group(2) for m in _ENTITY.finditer(text or "") if m.group(1) == "@"}


def strip_mention(text: str, user_id: str) -> str:
    """Wire-form text without the leading/inline mentions of `user_id` (the bot being addressed)."""
    return re.sub(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>", "", text or "").strip()
