"""The core imports no Slack: not slack_bolt, not slack_sdk, not the adapter (triage_bot.slack).

Every import statement of every core module is read, those inside functions included, so a
lazy `from triage_bot.slack import ...` in the core fails this test too.
"""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parents[1] / "triage_bot"
# the Slack adapter, the stand-ins, the CLI that wires things, and the migrations (every table, Slack's too)
ADAPTERS = ("slack", "testing", "cli", "migrations")
FORBIDDEN = ("slack_bolt", "slack_sdk", "triage_bot.slack")


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_no_core_module_imports_slack() -> None:
    core = [p for p in BOT.rglob("*.py") if p.relative_to(BOT).parts[0] not in ADAPTERS]
    assert len(core) > 40
    bad = {
        str(p.relative_to(BOT)): name
        for p in core
        for name in _imports(p)
        if name == FORBIDDEN[0] or name.startswith(tuple(f + "." for f in FORBIDDEN) + FORBIDDEN[1:])
    }
    assert bad == {}
