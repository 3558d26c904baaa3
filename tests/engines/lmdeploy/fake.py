"""A stand-in for `lmdeploy serve api_server`: /health (200, empty) and /v1/models, as its FastAPI
router answers them; the harness adds the failure modes every fake shares (refused, hang, 503...)."""

from __future__ import annotations

from typing import Any

from triage_bot.testing.fake_engines import FakeEngine, Mode, Reply, json_reply


class Fake(FakeEngine):
    OWNED_BY = "lmdeploy"

    def serve(self, method: str, path: str, body: bytes, m: Mode) -> Reply:
        if path == "/health":
            return self.health_ok(path)
        if path == "/v1/models":
            return json_reply(200, self.models_body())
        return json_reply(404, {"detail": "Not Found"})

    def model_card(self) -> dict[str, Any]:
        return super().model_card() | {"root": self.model, "parent": None}


FAKE = Fake
