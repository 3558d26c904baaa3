"""Reading the bot's metrics as Prometheus would: prometheus_client's own text parser."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from triage_bot import metrics

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(url: str | None = None) -> Samples:
    """GET `url`/metrics (the served page), or the exposition itself when no server is needed."""
    if url is None:
        return parse(metrics.exposition().decode())
    response = httpx.get(url + "/metrics", timeout=10)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)
