"""The CLI contracts other parts of the project and CI rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from triage_bot.cli.main import cli

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free."


def test_triage_json_from_stdin() -> None:
    result = CliRunner().invoke(cli, ["triage", "-", "--json", "--no-record"], input=OOM)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["match"]["id"] == "generic.cuda_oom"
    assert set(data["match"]) == {"id", "engine", "title", "confidence", "line", "values"}
    assert isinstance(data["candidates"], list) and "recovery" in data["answer"]


def test_triage_file_pretty(tmp_path: Path) -> None:
    paste = tmp_path / "paste.log"
    paste.write_bytes(OOM.encode() + b"\n\xff\x00")
    result = CliRunner().invoke(cli, ["triage", str(paste), "--no-record"])
    assert result.exit_code == 0, result.output
    assert "generic.cuda_oom" in result.output


def test_batch_jsonl(tmp_path: Path) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text(
        json.dumps({"case": "a", "text": OOM})
        + "\n"
        + json.dumps({"case": "b", "text": "lgtm, merging"})
        + "\n"
        + "not json\n"
        + json.dumps({"case": "d"})
        + "\n"
        + json.dumps(["a list"])
        + "\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["triage", "--jsonl", str(batch)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert rows[0]["case"] == "a" and rows[0]["id"] == "generic.cuda_oom" and rows[0]["passive"] is True
    assert set(rows[0]) == {"case", "id", "engine", "confidence", "passive"}
    assert rows[1] == {"case": "b", "id": None, "engine": None, "confidence": 0.0, "passive": False}
    assert "error" in rows[2]
    assert rows[3]["case"] == "d" and "text" in rows[3]["error"]
    assert rows[4]["case"] is None and "object" in rows[4]["error"]


def test_kb_lint_passes_on_the_bundled_kb() -> None:
    result = CliRunner().invoke(cli, ["kb", "lint", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "0 error(s)" in result.output


def test_faq_and_engines() -> None:
    runner = CliRunner()
    faq = runner.invoke(cli, ["faq", "what does gpu memory utilization mean"])
    assert faq.exit_code == 0 and "gpu" in faq.output.lower()
    engines = runner.invoke(cli, ["engines", "--json"])
    data = json.loads(engines.output)
    assert {"vllm", "sglang", "trtllm"} <= set(data["engines"])
    assert len(data["dimensions"]) == 5


def test_console_answers_a_piped_paste_and_records_it(tmp_path: Path) -> None:
    """The README's run command with no Slack credentials: a console on stdin, with a local history."""

    def console() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "triage_bot", "serve"],
            input=(OOM + "\n").encode(),
            capture_output=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "TRIAGE_DATA_DIR": str(tmp_path)},
        )

    first = console()
    assert first.returncode == 0, first.stderr.decode()
    assert b"generic.cuda_oom" in first.stdout and b"seen before" not in first.stdout
    assert (tmp_path / "triage-bot.sqlite3").is_file()  # the history in the data directory, created at need
    second = console()
    assert b"seen before: incident #1, 2 occurrences" in second.stdout, second.stdout.decode()[-800:]


def test_single_triage_is_recorded_and_listed(tmp_path: Path, monkeypatch) -> None:
    """`triage` records its match (source cli); `history --json` lists it; --no-record skips it."""
    url = f"sqlite:///{tmp_path / 'h.sqlite3'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("TRIAGE_SPOOL_PATH", str(tmp_path / "spool.jsonl"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["triage", "-", "--json"], input=OOM).exit_code == 0
    assert runner.invoke(cli, ["triage", "-", "--json"], input=OOM).exit_code == 0
    assert runner.invoke(cli, ["triage", "-", "--json", "--no-record"], input=OOM).exit_code == 0
    listed = runner.invoke(cli, ["history", "--json"])
    assert listed.exit_code == 0, listed.output
    incidents = json.loads(listed.output)
    incidents = incidents["incidents"] if isinstance(incidents, dict) else incidents
    assert len(incidents) == 1
    assert incidents[0]["signature_id"] == "generic.cuda_oom"
    assert incidents[0]["occurrence_count"] == 2


def test_feedback_exports_wrong_match_reports_with_the_paste(tmp_path: Path, monkeypatch) -> None:
    """`feedback --json` gives the knowledge base's authors each wrong-match report: what the bot
    said, what the person chose, and the paste as the history keeps it (masked)."""
    from triage_bot.history import open_store

    url = f"sqlite:///{tmp_path / 'h.sqlite3'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("TRIAGE_SPOOL_PATH", str(tmp_path / "spool.jsonl"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    secret = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwX"
    assert runner.invoke(cli, ["triage", "-", "--json"], input=f"HF_TOKEN={secret}\n{OOM}").exit_code == 0
    assert runner.invoke(cli, ["feedback"]).output.startswith("no feedback in the last 30 days")
    open_store(url).record_feedback(
        1, "U0ALICE", "wrong_match", correct_signature_id="vllm.kv_cache_no_memory"
    )
    listed = runner.invoke(cli, ["feedback", "--json"])
    assert listed.exit_code == 0, listed.output
    [report] = json.loads(listed.output)
    assert (report["incident_id"], report["signature_id"], report["correct_signature_id"]) == (
        1,
        "generic.cuda_oom",
        "vllm.kv_cache_no_memory",
    )
    assert "CUDA out of memory" in report["excerpt"] and secret not in report["excerpt"]
    text = runner.invoke(cli, ["feedback"]).output
    assert "wrong_match generic.cuda_oom -> vllm.kv_cache_no_memory  by U0ALICE" in text
    # --url names the database instead of DATABASE_URL (it raised TypeError: Settings is not a dataclass)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'other.sqlite3'}")
    named = runner.invoke(cli, ["history", "--json", "--url", url])
    assert named.exit_code == 0, named.output
    assert [i["signature_id"] for i in json.loads(named.output)] == ["generic.cuda_oom"]


def test_faq_finds_the_entry_that_is_about_the_question() -> None:
    from triage_bot.core import default_triager
    from triage_bot.faq import search

    kb = default_triager().kb
    expect = {
        "fp8 kv cache": "FP8 KV cache",
        "how do I pick tensor parallel size": "tensor-parallel",
        "how to enable prefix caching": "prefix caching",
        "vllm vs sglang which is faster": "Which engine should we use",
        "PagedAttention vs RadixAttention": "RadixAttention",
    }
    for question, words in expect.items():
        hits = search(kb, question)
        assert hits and words in hits[0].question, (question, [h.question for h in hits])
    assert search(kb, "what is the capital of France") == []
    assert search(kb, "x") == []


def test_faq_json() -> None:
    result = CliRunner().invoke(cli, ["faq", "--json", "prefix caching"])
    assert result.exit_code == 0, result.output
    assert "prefix caching" in json.loads(result.output)[0]["question"].lower()


def test_eval_without_arguments_falls_back_to_the_projects_held_out_set(monkeypatch, tmp_path: Path) -> None:
    import triage_bot.evaluation as evaluation

    monkeypatch.setattr(evaluation, "DEFAULT_CORPUS", tmp_path / "no-shared-corpus")  # a fresh clone alone
    result = CliRunner().invoke(cli, ["eval", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert Path(data["corpus"]) == evaluation.HOLDOUT_TEST
    assert data["counts"]["errors"] == sum(
        1 for line in (evaluation.HOLDOUT_TEST / "errors.jsonl").open() if line.strip()
    )


def test_eval_says_what_to_pass_when_no_corpus_is_found(monkeypatch, tmp_path: Path) -> None:
    import triage_bot.evaluation as evaluation

    monkeypatch.setattr(evaluation, "DEFAULT_CORPUS", tmp_path / "none")
    monkeypatch.setattr(evaluation, "HOLDOUT_TEST", tmp_path / "none-either")
    result = CliRunner().invoke(cli, ["eval"])
    assert result.exit_code != 0
    assert "pass --corpus DIR" in result.output


def test_info_prints_every_location_and_creates_none(tmp_path, monkeypatch) -> None:
    from triage_bot.cli.main import cli

    monkeypatch.setenv("TRIAGE_DATA_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DATABASE_URL", "postgresql://triage:hunter2hunter2@db:5432/triage")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["info", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert found["spool"] == str(tmp_path / "state" / "triage-bot.spool.jsonl")
    assert "hunter2hunter2" not in found["database"] and "@db:5432/triage" in found["database"]
    assert Path(found["knowledge"], "vllm.yaml").is_file() and Path(found["migrations"], "env.py").is_file()
    assert list(tmp_path.iterdir()) == []  # printing a path brings nothing into being


def test_kb_lint_fails_on_an_example_another_signature_takes(tmp_path: Path) -> None:
    from tests.support.knowledge import MINI_ENGINE, write_kb

    mine = write_kb(tmp_path / "good")
    assert CliRunner().invoke(cli, ["kb", "lint", "--quiet", "--directory", str(mine)]).exit_code == 0
    # the KV-cache signature gets an example that is really the EngineDeadError wrapper
    misfiled = MINI_ENGINE.replace(
        '      - "ValueError: No available memory for the cache blocks."\n',
        '      - "ValueError: No available memory for the cache blocks."\n'
        '      - "vllm.v1.engine.exceptions.EngineDeadError: EngineCore died"\n',
    )
    assert misfiled != MINI_ENGINE
    broken = write_kb(tmp_path / "bad", **{"vllm.yaml": misfiled})
    result = CliRunner().invoke(cli, ["kb", "lint", "--quiet", "--directory", str(broken)])
    assert result.exit_code == 1
    assert "vllm.kv_cache_no_memory: example 'vllm.v1.engine.exceptions.EngineDeadError" in result.output
    assert "matches vllm.engine_core_dead" in result.output


def test_kb_lint_fails_when_an_example_expects_what_the_answer_does_not_say(tmp_path: Path) -> None:
    from tests.support.knowledge import MINI_ENGINE, write_kb

    first_example = '      - "ValueError: No available memory for the cache blocks."\n'

    def lint(old: str, new: str) -> str:
        engine = MINI_ENGINE.replace(old, new, 1)
        assert engine != MINI_ENGINE
        directory = write_kb(tmp_path / str(len(list(tmp_path.iterdir()))), **{"vllm.yaml": engine})
        result = CliRunner().invoke(cli, ["kb", "lint", "--quiet", "--directory", str(directory)])
        return f"{result.exit_code} {result.output}"

    paste = "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` --model m"
    holds = f"      - text: '{paste}'\n        recovery: ['--gpu-memory-utilization']\n"
    assert lint(first_example, holds).startswith("0 ")
    wrong = f"      - text: '{paste}'\n        recovery: ['--max-model-len 4096']\n"
    assert "the recovery does not say '--max-model-len 4096'" in lint(first_example, wrong)
    value = f"      - text: '{paste}'\n        values: {{util: 0.95}}\n"
    assert "value util is None, expected 0.95" in lint(first_example, value)
    cause = "    cause: The weights and activations"
    counter = f"    counter_examples: ['No available memory for the cache blocks']\n{cause}"
    assert "counter-example 'No available memory for the cache blocks' is answered with it" in lint(
        cause, counter
    )


def test_ctrl_c_leaves_the_console_cleanly(tmp_path: Path) -> None:
    """`make run` without Slack is the console: Ctrl-C ends it with status 0, not 'Aborted!'."""
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "triage_bot", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "TRIAGE_DATA_DIR": str(tmp_path)},
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((OOM + "\n").encode())
    proc.stdin.flush()
    seen = b""
    while b"generic.cuda_oom" not in seen:  # the console is in its read loop once it has answered
        line = proc.stdout.readline()
        assert line, "the console ended before answering"
        seen += line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert b"Aborted" not in err
