"""The built wheel works on its own: installed into a fresh venv outside the checkout, it triages a
paste, migrates a database and serves HTTP mode against the Slack stand-in.

The wheel is built from a copy of what a release ships (pyproject, README, LICENSE, the package),
so nothing beside the package in the checkout can stand in for missing package data. The fresh
venv gets the dependencies from the test's own venv through a path entry (installing them again
would only re-test PyPI); that entry holds no triage_bot, so every import of it comes from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.support.replica import Replica
from triage_bot.testing import slack_requests as req
from triage_bot.testing.slack_standin import SIGNING_SECRET, SlackStandin

ROOT = Path(__file__).resolve().parents[1]
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv, outside the repository, with only the built wheel installed; its bin directory."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "triage_bot", source / "triage_bot", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(source)],
        check=True,
        capture_output=True,
        text=True,
        cwd=work,
    )
    [wheel] = (work / "dist").glob("triage_bot-*.whl")
    venv.create(work / "venv", with_pip=False)
    python = work / "venv" / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # without PYTHONPATH: a checkout on it (with its egg-info) would count as installed, and pip would skip the wheel
    clean = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        env=clean,
    )
    return work / "venv" / "bin"


def _env(home: Path) -> dict[str, str]:
    """The caller's environment without anything that points at the checkout or at test state."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV"} and not k.startswith(("TRIAGE_", "SLACK_", "DATABASE_URL"))
    }
    return env | {"HOME": str(home), "XDG_DATA_HOME": str(home / "data")}


def test_the_wheel_ships_the_knowledge_base_and_the_migrations(installed: Path, tmp_path: Path) -> None:
    info = json.loads(
        subprocess.run(
            [str(installed / "triage-bot"), "info", "--json"],
            cwd=tmp_path,
            env=_env(tmp_path),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    venv_root = str(installed.parent)
    assert info["package"].startswith(venv_root), info
    assert info["knowledge"].startswith(venv_root) and info["migrations"].startswith(venv_root), info
    assert info["data_dir"] == str(tmp_path / "data" / "triage-bot"), info


def test_the_installed_bot_triages_and_leaves_nothing_in_the_working_directory(
    installed: Path, tmp_path: Path
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = subprocess.run(
        [str(installed / "triage-bot"), "triage", "--json"],
        input=OOM,
        cwd=cwd,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["match"]["id"] == "generic.cuda_oom"
    assert list(cwd.iterdir()) == []  # the recorded incident went to the data directory
    assert (tmp_path / "data" / "triage-bot" / "triage-bot.sqlite3").is_file()


def test_the_installed_bot_migrates_a_database(installed: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    result = subprocess.run(
        [str(installed / "triage-bot"), "db", "upgrade", "--url", url],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    import sqlalchemy

    tables = set(sqlalchemy.inspect(sqlalchemy.create_engine(url)).get_table_names())
    assert {"alembic_version", "incidents", "slack_inbox"} <= tables, tables


def test_the_installed_bot_serves_http_mode(installed: Path, tmp_path: Path) -> None:
    with SlackStandin() as slack:
        replica = Replica(
            slack,
            tmp_path,
            database_url=f"sqlite:///{tmp_path / 'bot.sqlite3'}",
            program=(str(installed / "triage-bot"),),
        )
        replica.env = {k: v for k, v in replica.env.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        replica.start()
        try:
            with req.SignedSender(replica.events_url, SIGNING_SECRET) as send:
                assert send.event(req.event_callback(req.message(OOM, ts="1700000000.009000"))).status == 200
            [post] = slack.wait_for("chat.postMessage", timeout=60)
            assert post["thread_ts"] == "1700000000.009000" and "generic.cuda_oom" in post["text"]
        finally:
            output = replica.stop()
    assert replica.process is not None and replica.process.returncode == 0, output
