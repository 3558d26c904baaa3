"""docker-compose.yml, the Dockerfile and the entrypoint: the bot plus PostgreSQL, migrations at start."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from triage_bot.slack.http import HEALTH_PATH

ROOT = Path(__file__).resolve().parents[2]
SLACK_ENV = {
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_API_URL",
    "TRIAGE_ADMINS",
    "TRIAGE_ALERT_CHANNEL",
    "TRIAGE_DIGEST_CHANNEL",
}


def test_compose_runs_the_bot_against_postgres() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert set(services) == {"bot", "db"}
    db, bot = services["db"], services["bot"]
    assert db["image"].startswith("postgres:")
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert bot["build"] == "."
    assert bot["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert bot["env_file"] == [{"path": ".env", "required": False}]  # every setting in .env reaches the bot
    env = bot["environment"]
    assert env["DATABASE_URL"].startswith("postgresql://") and "@db:5432/" in env["DATABASE_URL"]
    assert not set(env) & SLACK_ENV  # secrets come from .env, never this file
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert all(f"\n{name}=" in example for name in SLACK_ENV - {"SLACK_API_URL"})
    assert "3000:3000" in bot["ports"]
    probe = " ".join(bot["healthcheck"]["test"])
    assert HEALTH_PATH in probe and ":3000" in probe and env["PORT"] == "3000"
    assert set(compose["volumes"]) == {"pgdata", "spool"}


def test_the_image_migrates_then_serves() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert dockerfile.startswith("#") and "FROM python:3.11" in dockerfile
    for part in (
        "COPY triage_bot ./triage_bot",
        "pip wheel --no-deps -w /dist .",
        "pip install /dist/*.whl",
        "TRIAGE_DATA_DIR=/data",
        "USER triage",
        'ENTRYPOINT ["/app/entrypoint.sh"]',
    ):
        assert part in dockerfile
    assert (
        "-e ." not in dockerfile and "COPY knowledge" not in dockerfile
    )  # the image runs the wheel, not a checkout
    entrypoint = (ROOT / "docker" / "entrypoint.sh").read_text(encoding="utf-8")
    upgrade, serve = entrypoint.index("triage-bot db upgrade"), entrypoint.index("exec triage-bot serve")
    assert upgrade < serve and "--http --port" in entrypoint
    assert (
        shutil.which("sh") is None
        or subprocess.run(["sh", "-n", str(ROOT / "docker" / "entrypoint.sh")]).returncode == 0
    )


def _compose() -> list[str] | None:
    """The compose command here, if any: `config` only parses the file, so no docker engine is needed."""
    candidates = [["docker", "compose"], ["docker-compose"]]
    for command in candidates:
        if shutil.which(command[0]) is None:
            continue
        try:
            if subprocess.run([*command, "version"], capture_output=True, timeout=10).returncode == 0:
                return command
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


COMPOSE = _compose()


@pytest.mark.skipif(COMPOSE is None, reason="neither `docker compose` nor `docker-compose` is installed here")
def test_docker_compose_config_passes() -> None:
    assert COMPOSE is not None
    result = subprocess.run([*COMPOSE, "config", "-q"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
