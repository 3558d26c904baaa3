"""`triage-bot eval`: accuracy, passive recall and false positives on a labelled corpus."""

from __future__ import annotations

import json
from pathlib import Path

import click

from triage_bot.core import default_triager
from triage_bot.evaluation import default_corpus, evaluate


@click.command("eval")
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder with errors.jsonl (and optionally fresh.jsonl, negatives.jsonl). Default: "
    "../shared/corpus beside the checkout, else the project's never-tuned set tests/holdout/traffic_test.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--misses", is_flag=True, help="List every wrong case.")
def eval_command(corpus: Path | None, as_json: bool, misses: bool) -> None:
    """Evaluate the matcher on the corpus."""
    corpus = corpus or default_corpus()
    if corpus is None:
        raise click.ClickException(
            "no corpus found: pass --corpus DIR, a folder with errors.jsonl "
            "(a checkout has tests/holdout/traffic_test)"
        )
    if not (corpus / "errors.jsonl").is_file():
        raise click.ClickException(
            f"no errors.jsonl in {corpus}: pass --corpus DIR, a folder with errors.jsonl"
        )
    ev = evaluate(default_triager(), corpus)
    summary = ev.summary()
    if as_json:
        click.echo(json.dumps({"corpus": str(corpus), **summary}, indent=2))
        return
    click.echo(f"corpus: {corpus}")
    click.echo(
        f"explicit top-1 (errors.jsonl, n={ev.errors.total}):        {ev.errors.top1():.3f}  (target >= 0.95)"
    )
    click.echo(
        f"passive recall (errors.jsonl):                  {ev.errors.passive_recall():.3f}  (target >= 0.90)"
    )
    click.echo(
        f"passive false positives (negatives, n={ev.negatives.total}):    {ev.negatives.passive_rate():.3f}  (target <= 0.01)"
    )
    click.echo(
        f"explicit top-1 (fresh with evidence, n={ev.fresh_evidence.total}):  {ev.fresh_evidence.top1():.3f}  (target >= 0.85)"
    )
    click.echo(
        f"explicit top-1 (fresh cut before cause, n={ev.fresh_cut.total}): {ev.fresh_cut.top1():.3f}  (informational)"
    )
    for name, keep in (
        ("with evidence", lambda r: r.evidence),
        ("specific tier", lambda r: r.specific),
        ("family tier", lambda r: not r.specific),
    ):
        part = ev.errors.subset(name, keep)
        click.echo(f"explicit top-1 (errors.jsonl {name}, n={part.total}): {part.top1():.3f}")
    click.echo(
        "\ncalibration of errors.jsonl (confidence band: answers, share right; target >= 0.95 at 0.8+)"
    )
    for low, high, count, accuracy in ev.errors.calibration():
        click.echo(f"  {low:.1f}-{high:.1f}: {count:4d}  {accuracy:.2f}")
    click.echo("\nmost confused (label -> predicted):")
    for report in (ev.errors, ev.fresh_evidence):
        for (label, predicted), count in report.confused(8):
            click.echo(f"  [{report.name}] {label} -> {predicted}: {count}")
    click.echo("\nper id (errors.jsonl): correct/total")
    for sig_id, (ok, total) in ev.errors.per_id().items():
        mark = "" if ok == total else "  <--"
        click.echo(f"  {sig_id:50s} {ok}/{total}{mark}")
    if misses:
        click.echo("\nmisses:")
        for report in (ev.errors, ev.fresh_evidence, ev.fresh_cut, ev.negatives):
            for r in report.results:
                if not r.correct or (report is ev.negatives and r.passive):
                    click.echo(
                        f"  [{report.name}] {r.case}: label={r.label} got={r.predicted} "
                        f"conf={r.confidence:.2f} passive={r.passive} engine={r.engine}"
                    )
