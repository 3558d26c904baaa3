"""`triage-bot kb lint`, `triage-bot faq` and `triage-bot engines`."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from triage_bot.kb.loader import KnowledgeBase, Problem, collect_problems


@click.group()
def kb() -> None:
    """Work with the knowledge base."""


@kb.command()
@click.option("--quiet", is_flag=True, help="Print only problems and a one-line summary.")
@click.option("--no-cross-check", is_flag=True, help="Skip matching each example against the others.")
@click.option(
    "--directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Lint this knowledge directory instead of the bundled one.",
)
def lint(quiet: bool, no_cross_check: bool, directory: Path | None) -> None:
    """Validate the knowledge base; exit 1 on any error, a signature's example that another matches included."""
    kb_, problems = collect_problems(directory)
    if kb_ is not None and not no_cross_check:
        problems += cross_check(kb_)
    warnings: list[Problem] = [p for p in problems if p.level != "error"]
    errors = [p for p in problems if p.level == "error"]
    for problem in [*errors, *warnings]:
        click.echo(str(problem), err=bool(errors))
    if kb_ is not None and not quiet:
        families = sum(s.is_family for s in kb_.signatures)
        click.echo(
            f"{len(kb_.signatures)} signatures ({len(kb_.signatures) - families} specific, {families} families), "
            f"{len(kb_.engines)} engines, {len(kb_.faq)} FAQ entries"
        )
    click.echo(f"kb lint: {len(errors)} error(s), {len(warnings)} warning(s)")
    if errors:
        sys.exit(1)


@kb.command()
@click.option(
    "--update",
    "update",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Rewrite the rules block (between <!-- rules:start --> and <!-- rules:end -->) of this file.",
)
def rules(update: Path | None) -> None:
    """Print the ranking rules, in the order they decide (docs/knowledge-base.md shows this)."""
    from triage_bot.matching.rules import markdown

    if update is None:
        click.echo(markdown(), nl=False)
        return
    text = update.read_text(encoding="utf-8")
    start, end = "<!-- rules:start -->\n", "<!-- rules:end -->"
    if start not in text or end not in text:
        raise click.ClickException(f"{update} has no {start.strip()} ... {end} block")
    head, rest = text.split(start, 1)
    update.write_text(head + start + markdown() + end + rest.split(end, 1)[1], encoding="utf-8")
    click.echo(f"updated the rules block of {update}")


def cross_check(kb_: KnowledgeBase) -> list[Problem]:
    """Each signature's examples against the whole knowledge base (triage_bot/signature_checks.py)."""
    from triage_bot.core import Triager
    from triage_bot.signature_checks import all_problems

    return all_problems(Triager(kb_))


@click.command()
@click.argument("question", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True)
def faq(question: tuple[str, ...], as_json: bool) -> None:
    """Answer a question from the FAQ."""
    from triage_bot.core import default_triager
    from triage_bot.faq import search

    hits = search(default_triager().kb, " ".join(question))
    if as_json:
        click.echo(json.dumps([h.to_dict() for h in hits], indent=2))
        return
    if not hits:
        click.echo("No FAQ entry matches that question. Try other words, or `triage-bot engines`.")
        return
    from triage_bot.render.terminal import wrap_words

    width = min(shutil.get_terminal_size().columns, 100)
    best = hits[0]
    click.echo(click.style(wrap_words(best.question, width), bold=True))
    click.echo(wrap_words(best.answer, width))
    for doc in best.docs:
        click.echo(f"  {doc}")
    if len(hits) > 1:
        click.echo("\n" + wrap_words("Related: " + " · ".join(h.question for h in hits[1:]), width))


@click.command()
@click.argument("question", nargs=-1)
@click.option("--json", "as_json", is_flag=True)
def engines(question: tuple[str, ...], as_json: bool) -> None:
    """Compare the engines, or say which to choose: `engines H100 70B lowest latency json`."""
    from rich.console import Console

    from triage_bot.core import default_triager
    from triage_bot.engine_guide import describe, recommend
    from triage_bot.render.terminal import engines_table, wrap_words

    kb_ = default_triager().kb
    asked = " ".join(question).strip()
    rec = recommend(kb_, asked) if asked else None
    if as_json:
        dims = kb_.matrix_dimensions or []
        payload: dict[str, object] = {
            "dimensions": [d.model_dump() for d in dims],
            "engines": {e.id: {"name": e.name, "matrix": e.matrix} for e in kb_.engines.values()},
        }
        if asked:
            payload["recommendation"] = None if rec is None else rec.to_dict()
        click.echo(json.dumps(payload, indent=2))
        return
    console = Console()
    if rec is not None:
        width = min(shutil.get_terminal_size().columns, 100)
        for line in describe(rec):
            click.echo(wrap_words(line, width))
        return
    if asked:
        click.echo(
            "I could not tell what you need from that. Name the hardware, the model's size, the goal "
            "(throughput or latency) or the features, e.g. `triage-bot engines H100 70B lowest latency json`.\n"
        )
    console.print(engines_table(kb_, console.width))
