"""The `triage-bot` command line: one lazily loaded module per command group.

Commands are imported only when invoked, so `triage-bot triage` does not pay for SQLAlchemy or
slack-bolt, and a new command is one new module plus one line in COMMANDS.
"""

from __future__ import annotations

import importlib

import click

# command name -> "module:attribute" of a click command or group
COMMANDS: dict[str, str] = {
    "triage": "triage_bot.cli.triage_commands:triage",
    "eval": "triage_bot.cli.eval_commands:eval_command",
    "faq": "triage_bot.cli.kb_commands:faq",
    "engines": "triage_bot.cli.kb_commands:engines",
    "kb": "triage_bot.cli.kb_commands:kb",
    "serve": "triage_bot.cli.serve_commands:serve",
    "db": "triage_bot.cli.db_commands:db",
    "history": "triage_bot.cli.history_commands:history",
    "feedback": "triage_bot.cli.history_commands:feedback",
    "check": "triage_bot.cli.health_commands:check",
    "digest": "triage_bot.cli.digest_commands:digest",
    "info": "triage_bot.cli.info_commands:info",
}


class LazyGroup(click.Group):
    """A click group that imports each subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triage-bot")
def cli() -> None:
    """Triage errors from LLM serving engines (vLLM, SGLang, TensorRT-LLM)."""


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
