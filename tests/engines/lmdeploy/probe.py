"""LMDeploy's `lmdeploy serve api_server`: GET /health answers 200 with an empty body while the
server runs (lmdeploy/serve/openai/api_server.py). It has no Prometheus page unless launched with
metrics on, so this probe reads health only: enough for up and down."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from triage_bot.health.observation import Observation
from triage_bot.health.probes import Http
from triage_bot.health.probes._common import health_step, new_observation

if TYPE_CHECKING:
    from triage_bot.health.config import EngineConfig

KIND = "lmdeploy"
ENGINE = "lmdeploy"  # the knowledge engine of tests/engines/lmdeploy/lmdeploy.yaml
WORDS = ("lmdeploy", "turbomind")
SUPPORTS_GENERATE = False
DEFAULT_TIMEOUT_S = 5.0


async def probe(http: Http, engine: EngineConfig, now: datetime) -> Observation:
    obs = new_observation(engine, now)
    await health_step(http, engine, obs, "/health")
    return obs
