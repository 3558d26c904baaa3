"""`/triage` and its subcommands: text in, a message out, no Slack calls.

The listeners (slash command, mentions) decide where a result goes; this module decides what it
says. Anything that is not a subcommand is a paste to triage, and a lone unknown word gets the
help (a typo such as `/triage histroy` should not read as an error paste).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from triage_bot import engine_guide, faq, subcommands
from triage_bot.blockkit import MAX_BLOCKS
from triage_bot.slack.blocks import Message, lines_message, text_message
from triage_bot.slack.config import SlackConfig
from triage_bot.slack.integrations import Integrations, mute_line
from triage_bot.slack.text import escape, truncate
from triage_bot.slack.triage import Triaged, TriageJob
from triage_bot.text.candidates import has_failure_signal
from triage_bot.text.normalize import normalize

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore
    from triage_bot.kb.loader import KnowledgeBase


HELP_LINES = [
    ("`/triage <error text>`", "the known failure, how sure, why, and the recovery command"),
    ("`/triage history [engine] [days]`", "incidents seen recently (default: all engines, 7 days)"),
    ("`/triage status`", "the engines' last health check"),
    ("`/triage digest`", "the last weekly digest"),
    ("`/triage faq <question>`", "an answer from the FAQ"),
    (
        "`/triage engines [what you have and need]`",
        "which engine to choose (e.g. `engines MI300X agents json`), or the comparison",
    ),
    ("`/triage search <words>`", "find signatures by words"),
    (
        "`/triage resolve <incident> [how it was fixed]`",
        "close an incident, with a note for next time (admins)",
    ),
    ("`/triage mute <signature|engine> <duration>`", "silence passive replies, e.g. `mute vllm 2h` (admins)"),
    ("`/triage mutes`", "the mutes in force, with their numbers"),
    ("`/triage unmute <number>`", "end a mute now (admins)"),
    ("`/triage help`", "this help"),
]
SUBCOMMANDS = (
    "help",
    "history",
    "status",
    "digest",
    "faq",
    "engines",
    "search",
    "resolve",
    "mute",
    "mutes",
    "unmute",
)
ADMIN_ONLY = ("resolve", "mute", "unmute")
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")
_WORD = re.compile(r"^[A-Za-z][A-Za-z_-]{0,24}$")


@dataclass
class Result:
    """What a subcommand produced; `triaged` is set for a paste (it carries the incident)."""

    message: Message
    kind: str
    triaged: Triaged | None = None
    notes: list[str] = field(default_factory=list)
    resolved: int | None = None  # an incident this command resolved: its posted answer loses the button

    @property
    def incident_id(self) -> int | None:
        return self.triaged.incident_id if self.triaged else None


def help_message(prefix: str = "", command: str = "/triage") -> Message:
    lines = [f"{escape(usage.replace('/triage', command))} — {what}" for usage, what in HELP_LINES]
    title = "triage-bot"
    body = (
        (prefix + "\n\n" if prefix else "")
        + "Paste an engine error in a channel I'm in, or:\n"
        + "\n".join(lines)
    )
    return text_message(title, body)


def refusal(subcommand: str) -> Message:
    return text_message(
        "Sorry, only the bot's admins can do that.",
        f"`{escape(subcommand)}` changes the incident history for everyone, so it is limited to the users "
        "listed in `TRIAGE_ADMINS`. Ask one of them, or use the Helpful / Wrong match buttons.",
    )


def _no_history() -> Message:
    return text_message(
        "The incident history is not configured.", "Set `DATABASE_URL` and run `triage-bot db upgrade`."
    )


def _unavailable(title: str) -> Message:
    """What a user sees when storage fails: no host, port or raw exception (triage_bot/subcommands.py
    logged those)."""
    return text_message(
        title,
        "The incident history's database is not answering. Try again in a minute; "
        "the bot keeps answering pastes meanwhile.",
    )


class Commands:
    """Runs one `/triage …` line for one user in one channel."""

    def __init__(
        self, job: TriageJob, history: HistoryStore | None, config: SlackConfig, integrations: Integrations
    ):
        self.job = job
        self.history = history
        self.config = config
        self.integrations = integrations
        # a handler returns its message, or a Result when it has more to say (the incident resolved)
        self.handlers: dict[str, Callable[[str, str, str | None], Message | Result]] = {
            "history": self._history,
            "status": self._status,
            "digest": self._digest,
            "faq": self._faq,
            "engines": self._engines,
            "search": self._search,
            "resolve": self._resolve,
            "mute": self._mute,
            "mutes": self._mutes,
            "unmute": self._unmute,
        }

    @property
    def kb(self) -> KnowledgeBase:
        return self.job.triager.kb

    def run(
        self,
        text: str,
        *,
        user: str,
        channel: str | None,
        key: str | None = None,
        thread_ts: str | None = None,
        notes: list[str] | None = None,
    ) -> Result:
        """`text` is plain (already converted from Slack's wire form); `notes` are mrkdwn lines for an answer."""
        text = text.strip()
        word, _, rest = text.partition(" ")
        word = word.lower()
        if not text or word == "help":
            return Result(help_message(command=self.config.command), "help")
        if word in self.handlers:
            if word in ADMIN_ONLY and not self.config.is_admin(user):
                return Result(refusal(word), "refusal")
            out = self.handlers[word](rest.strip(), user, channel)
            return out if isinstance(out, Result) else Result(out, word)
        if not notes and faq.is_question(text) and not has_failure_signal(normalize(text)):
            return self._question(text, user, channel)
        triaged = self.job.run(text, channel=channel, thread_ts=thread_ts, user=user, key=key)
        triaged.notes.extend(notes or [])
        if triaged.answer.match is None and _WORD.match(text):
            return Result(
                help_message(f"I don't know the subcommand `{escape(text)}`.", self.config.command), "help"
            )
        return Result(triaged.message(buttons=True), "answer", triaged)

    # -- subcommands -----------------------------------------------------------------------

    def _history(self, args: str, user: str, channel: str | None) -> Message:
        found = subcommands.incidents(self.history, self.kb, args)
        if isinstance(found, subcommands.Outcome):
            if found.kind == "bad_days":
                return text_message("Days must be more than 0.")
            if found.kind == "unknown_engine":
                return text_message(
                    f"No engine `{escape(found.detail)}`.",
                    f"Use one of {', '.join(f'`{e}`' for e in found.known)}, and a number of days: "
                    f"`{self.config.command} history vllm 30d`.",
                )
            return self._storage(found, "The incident history cannot be read right now.")
        engine, days = found.engine, found.days
        scope = f"{escape(engine)} " if engine else ""
        title = f"Incidents on {scope or 'all engines '}in the last {days:g} day{'s' if days != 1 else ''}"
        lines = []
        for inc in found.rows:
            where = f"<#{inc.target}>" if _CHANNEL_ID.match(inc.target or "") else escape(inc.target or "")
            line = (
                f"`#{inc.id}` `{escape(inc.signature_id)}` · {escape(inc.engine)} · *{escape(inc.status)}* · "
                f"{inc.occurrence_count}× · last {inc.last_seen:%Y-%m-%d %H:%M} · {where}"
            )
            if inc.resolved_by:
                line += f" · resolved by {escape(inc.resolved_by)}"
            lines.append(line)
        if found.cut:
            lines.append(
                f"_Showing the latest {subcommands.HISTORY_LIMIT}; `triage-bot history --json` lists all._"
            )
        return lines_message(title, lines, "None. :tada:")

    def _storage(self, outcome: subcommands.Outcome, unavailable: str) -> Message:
        """The two outcomes every history subcommand shares: no history, or a database not answering."""
        if outcome.kind == "no_history":
            return _no_history()
        return _unavailable(unavailable)

    def _status(self, args: str, user: str, channel: str | None) -> Message:
        lines, empty = self.integrations.engines()
        quiet, _ = self.integrations.quiet_periods()
        shown = [line.mrkdwn() for line in lines]
        if quiet:  # what is silenced belongs beside the health it silences
            shown += ["", "*Mutes and maintenance*", *quiet]
        return lines_message("Engine health", shown, empty)

    def _digest(self, args: str, user: str, channel: str | None) -> Message:
        view, empty = self.integrations.digest()
        if view is None:
            return text_message("Weekly digest", empty)
        if view.blocks:
            return Message(text=view.text or "Weekly digest", blocks=view.blocks[:MAX_BLOCKS])
        return lines_message("Weekly digest", view.text.splitlines(), empty)

    def _question(self, text: str, user: str, channel: str | None) -> Result:
        """A question with no error in it: which engine to use goes to the decision guide when it
        names what the guide weighs, anything else to the FAQ."""
        rec = engine_guide.recommend(self.kb, text) if faq.asks_to_choose(text) else None
        if rec is not None:
            return Result(_recommendation_message(rec), "engines")
        hits = faq.search(self.kb, text)
        if hits:
            return Result(_faq_message(hits), "faq")
        return Result(
            text_message(
                "No FAQ entry answers that question.",
                "If something failed, paste the error or the log itself and I will triage it. "
                f"`{self.config.command} help` lists what else I can do.",
            ),
            "faq",
        )

    def _faq(self, args: str, user: str, channel: str | None) -> Message:
        if not args:
            return text_message(
                "Ask a question after `faq`",
                f"For example `{self.config.command} faq what does gpu-memory-utilization mean`.",
            )
        hits = faq.search(self.kb, args)
        if not hits:
            return text_message(
                "No FAQ entry matches that question.",
                f"Try other words, `{self.config.command} search &lt;words&gt;` or "
                f"`{self.config.command} engines`.",
            )
        return _faq_message(hits)

    def _engines(self, args: str, user: str, channel: str | None) -> Message:
        rec = engine_guide.recommend(self.kb, args) if args.strip() else None
        if rec is not None:
            return _recommendation_message(rec)
        engines = list(self.kb.engines.values())
        dims = self.kb.matrix_dimensions or []
        if not engines or not dims:
            return text_message("No engine comparison in the knowledge base yet.")
        sections = []
        for dim in dims:
            rows = "\n".join(f"• *{escape(e.name)}*: {escape(e.matrix.get(dim.key, '—'))}" for e in engines)
            sections.append(f"*{escape(dim.title)}*\n{rows}")
        return lines_message(" vs ".join(e.name for e in engines), sections, "")

    def _search(self, args: str, user: str, channel: str | None) -> Message:
        if not args:
            return text_message(
                "Give some words to search for", f"e.g. `{self.config.command} search kv cache`."
            )
        found = subcommands.search_signatures(self.kb, args)
        lines = [
            f"`{escape(sig.id)}` {escape(sig.title)} ({escape(sig.engine)}, {escape(sig.severity)})"
            for sig, _score in found
        ]
        return lines_message(
            f"Signatures matching “{escape(truncate(args, 80))}”", lines, "No signature matches those words."
        )

    def _resolve(self, args: str, user: str, channel: str | None) -> Result:
        """The listener takes the Resolved button off the posted answer of the incident resolved."""
        done = subcommands.resolve(self.history, args, user)
        resolved = done.number if done.kind == "done" else None
        return Result(self._resolve_message(done), "resolve", resolved=resolved)

    def _resolve_message(self, done: subcommands.Outcome) -> Message:
        raw = done.number
        if done.kind == "usage":
            return text_message(
                "Which incident?",
                f"Give its number, e.g. `{self.config.command} resolve 42` "
                f"(see `{self.config.command} history`).",
            )
        if done.kind == "not_found":
            return text_message(f"There is no incident #{raw}.")
        if done.kind == "queued":
            return text_message(
                f"Incident #{raw} will be resolved.", "The database is away; the change is queued."
            )
        if done.kind == "already":
            return text_message(f"Incident #{raw} was already resolved.")
        if done.kind == "done":
            noted = f" Noted how: {escape(done.detail)}" if done.detail else ""
            return text_message(f"Incident #{raw} resolved.", f"Its next repeat opens a new incident.{noted}")
        return self._storage(done, "The incident could not be resolved right now.")

    def _mute(self, args: str, user: str, channel: str | None) -> Message:
        done, target = subcommands.mute(self.history, self.kb, args, user)
        usage = f"`{self.config.command} mute &lt;signature|engine&gt; &lt;duration&gt;`, e.g. `mute vllm.kv_cache_no_memory 2h`"
        if done.kind == "usage":
            return text_message("What to mute, and for how long?", usage)
        if done.kind == "bad_duration":
            return text_message(
                "That duration was not understood.",
                "Use minutes, hours, days or weeks, up to a year: `30m`, `2h`, `1d`, `1w`. " + usage,
            )
        if done.kind == "unknown_signature":
            return text_message(
                f"No signature `{escape(done.detail)}` in the knowledge base.",
                f"Find its id with `{self.config.command} search &lt;words&gt;`.",
            )
        if done.kind == "refused":
            return text_message("That mute cannot be set.", escape(done.detail))
        if done.kind != "done" or target is None:
            return self._storage(done, "The mute could not be saved right now.")
        what = (
            f"`{escape(target.signature_id)}`"
            if target.signature_id
            else f"engine `{escape(target.engine or '')}`"
        )
        hours = target.duration.total_seconds() / 3600
        span = f"{hours:g} hour{'s' if hours != 1 else ''}" if hours < 48 else f"{hours / 24:g} days"
        return text_message(
            f"Muted {what} for {span}.",
            f"Passive replies for it stay silent until then; `{self.config.command} &lt;error&gt;` still answers.",
        )

    def _mutes(self, args: str, user: str, channel: str | None) -> Message:
        found = subcommands.mutes(self.history)
        if isinstance(found, subcommands.Outcome):
            return self._storage(found, "The mutes cannot be read right now.")
        lines = [mute_line(mute) for mute in found]
        if lines:
            lines.append(f"_End one with `{self.config.command} unmute &lt;number&gt;`._")
        return lines_message("Mutes in force", lines, "None: every failure is answered.")

    def _unmute(self, args: str, user: str, channel: str | None) -> Message:
        done = subcommands.unmute(self.history, args)
        number = done.number
        if done.kind == "usage":
            return text_message(
                "Which mute?",
                f"`{self.config.command} unmute &lt;number&gt;`; "
                f"`{self.config.command} mutes` lists them with their numbers.",
            )
        if done.kind == "not_found":
            return text_message(f"There is no mute #{number}.")
        if done.kind == "queued":
            return text_message(
                f"Mute #{number} will end when the history is back.",
                "The database is away; the change waits in the local spool.",
            )
        if done.kind == "already":
            return text_message(
                f"Mute #{number} is not in force.", f"`{self.config.command} mutes` lists those that are."
            )
        if done.kind == "done":
            return text_message(f"Mute #{number} ended.", "Passive replies for it are back.")
        return self._storage(done, "The mute could not be ended right now.")


def _faq_message(hits: list[faq.FaqHit]) -> Message:
    """The best FAQ entry with its docs, and the next ones as related questions."""
    best = hits[0]
    body = escape(best.answer)
    if best.docs:
        body += "\n" + "  ".join(escape(d) for d in best.docs[:5])
    related = [f"• {escape(h.question)}" for h in hits[1:]]
    return text_message(
        escape(best.question), body, fields=(["*Related*\n" + "\n".join(related)] if related else [])
    )


def _recommendation_message(rec: engine_guide.Recommendation) -> Message:
    lines = [escape(line) for line in engine_guide.describe(rec)]
    title = f"Choose {rec.best.engine.name}" if rec.best is not None else "No engine fits"
    return lines_message(escape(title), lines, "")
