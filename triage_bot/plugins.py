"""Engines added from outside the package: their probe and fake modules, named by entry points.

The knowledge base learns an engine from a knowledge file (TRIAGE_KNOWLEDGE_PATH); the health
checks and the fakes learn it from the metadata of an installed package, the standard way Python
tools take plugins (pytest, flake8):

    [project.entry-points."triage_bot.probes"]
    lmdeploy = "acme_triage.lmdeploy_probe"

    [project.entry-points."triage_bot.fakes"]
    lmdeploy = "acme_triage.lmdeploy_fake"

A bundled module of the same name wins, so an installed package cannot replace a bundled probe.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Sequence

PROBES = "triage_bot.probes"
FAKES = "triage_bot.fakes"


def modules(group: str, package: str, path: Sequence[str]) -> dict[str, str]:
    """Kind -> module for one group: the package's own modules, then the installed plugins.

    The package's modules are those in `path` whose names do not start with `_` (helpers)."""
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group=group)}
    found.update(
        {m.name: f"{package}.{m.name}" for m in pkgutil.iter_modules(path) if not m.name.startswith("_")}
    )
    return found
