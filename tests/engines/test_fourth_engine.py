"""A fourth engine is one directory: tests/engines/lmdeploy holds its knowledge file, probe and fake.

Nothing in the package names LMDeploy. The bot learns the engine from the knowledge file's
`engine:` header (TRIAGE_KNOWLEDGE_PATH points at the directory), and its probe and fake from
entry points, as an installed package would declare them (a dist-info directory on the path).
Each test runs the real `triage-bot` process, so what is proved is what an operator who adds an
engine gets: triage, `check` and the digest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from triage_bot.testing.fake_engines import FakeEngines, Mode

HERE = Path(__file__).resolve().parent / "lmdeploy"
ROOT = HERE.parents[2]

TURBOMIND_OOM = """\
$ lmdeploy serve api_server internlm/internlm2_5-7b-chat --server-port 23333
2024-04-23 10:11:19,967 - lmdeploy - INFO - updated backend_config=TurbomindEngineConfig(tp=1, session_len=8192)
[TM][INFO] Set logger level by INFO
Exception in thread Thread-2:
Traceback (most recent call last):
  File "/usr/local/lib/python3.9/threading.py", line 980, in _bootstrap_inner
    self.run()
  File "/home/mel/.local/lib/python3.9/site-packages/lmdeploy/turbomind/turbomind.py", line 444, in _create_model_instance
    model_inst = self.tm_model.model_comm.create_model_instance(
RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231
"""
# LMDeploy's PyTorch backend running out of memory: a generic signature, answered on the new engine
PYTORCH_OOM = """\
  File "/opt/lmdeploy/lmdeploy/pytorch/engine/model_agent.py", line 512, in _forward_impl
    output = model_forward(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB \
of which 1.12 GiB is free.
"""


def bot(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage_bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


ENTRY_POINTS = """\
[triage_bot.probes]
lmdeploy = tests.engines.lmdeploy.probe

[triage_bot.fakes]
lmdeploy = tests.engines.lmdeploy.fake
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What `pip install` of a package declaring the probe and the fake leaves on the path."""
    dist = tmp_path / "site" / "triage_lmdeploy-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: triage-lmdeploy\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(dist.parent))  # this process runs the fake
    return dist.parent


@pytest.fixture
def env(tmp_path: Path, site: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "TRIAGE_KNOWLEDGE_PATH": str(HERE),
        "TRIAGE_CACHE_DIR": str(tmp_path / "cache"),
        "TRIAGE_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'history.sqlite3'}",
    }


def answer_of(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout)["answer"]
    return answer


def test_the_knowledge_file_alone_makes_the_engine_known(env: dict[str, str]) -> None:
    lint = bot("kb", "lint", "--quiet", env=env)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    engines = bot("engines", "--json", env=env)
    assert engines.returncode == 0, engines.stderr
    assert "LMDeploy" in engines.stdout
    without = bot("engines", "--json", env={k: v for k, v in env.items() if k != "TRIAGE_KNOWLEDGE_PATH"})
    assert "LMDeploy" not in without.stdout  # nothing in the package knows it


def test_its_own_failure_is_answered_with_its_own_recovery(env: dict[str, str]) -> None:
    answer = answer_of(bot("triage", "--json", "--no-record", "-", env=env, stdin=TURBOMIND_OOM))
    assert answer["id"] == "lmdeploy.turbomind_out_of_memory"
    assert answer["engine"] == "lmdeploy"
    # the model from the paste's own launch line: lmdeploy.yaml's header names the command
    assert answer["commands"] == [
        "lmdeploy serve api_server internlm/internlm2_5-7b-chat --cache-max-entry-count 0.5"
    ]


def test_a_generic_failure_on_it_gets_the_default_recovery(env: dict[str, str]) -> None:
    answer = answer_of(bot("triage", "--json", "--no-record", "-", env=env, stdin=PYTORCH_OOM))
    assert answer["id"] == "generic.cuda_oom"
    assert answer["engine"] == "lmdeploy"
    assert "2.00 GiB with 1.12 GiB free" in str(answer["recovery"])  # the paste's own numbers
    assert "vllm serve" not in str(answer["recovery"])  # not another engine's command


@pytest.fixture
def fakes() -> Iterator[FakeEngines]:
    with FakeEngines() as running:
        yield running


def test_check_probes_it(env: dict[str, str], fakes: FakeEngines, tmp_path: Path) -> None:
    fake = fakes.add("lmdeploy", name="internlm-prod")  # found through its entry point
    engines = tmp_path / "engines.yaml"
    entry = {"name": fake.name, "kind": "lmdeploy", "base_url": fake.base_url, "timeout_s": 2.0}
    engines.write_text(yaml.safe_dump({"engines": [entry]}), encoding="utf-8")

    up = bot("check", "--engines", str(engines), "--json", env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    [state] = json.loads(up.stdout)
    assert (state["name"], state["state"]) == ("internlm-prod", "up")
    assert ("GET", "/health") in fake.requests

    fake.set_mode(Mode.REFUSED)
    down = bot("check", "--engines", str(engines), "--json", env=env)
    assert down.returncode == 1
    [state] = json.loads(down.stdout)
    assert state["state"] == "down" and state["findings"][0]["signature_id"] == "health.engine_down"
    assert all(method == "GET" for method, _ in fake.requests)  # the bot only reads


def test_the_digest_counts_its_incidents(env: dict[str, str]) -> None:
    assert bot("db", "upgrade", env=env).returncode == 0
    recorded = bot("triage", "--json", "-", env=env, stdin=TURBOMIND_OOM)
    assert answer_of(recorded)["id"] == "lmdeploy.turbomind_out_of_memory"
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    result = bot("digest", "--dry-run", "--json", "--end", f"{tomorrow}T00:00:00+00:00", env=env)
    assert result.returncode == 0, result.stderr
    numbers = json.loads(result.stdout)["digest"]["numbers"]
    assert [(e["engine"], e["incidents"]) for e in numbers["by_engine"]] == [("lmdeploy", 1)]
    assert numbers["by_signature"][0]["signature_id"] == "lmdeploy.turbomind_out_of_memory"
