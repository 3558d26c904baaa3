"""No `Any` at the seams between packages: a parameter that carries one package's object into
another (the history store, the knowledge base, a signature, the digest, a notifier, the
triager, the Slack deps, client or message) is annotated with its real type, so mypy checks
every call across the seam. JSON payloads and Jinja values stay `Any`: they are data."""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parents[1] / "triage_bot"
SEAMS = {
    "store",
    "history",
    "kb",
    "sig",
    "digest",
    "notifier",
    "triager",
    "deps",
    "client",
    "message",
    "outputs",
}


def test_seam_parameters_are_not_any() -> None:
    loose: list[str] = []
    checked = 0
    for path in BOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                if arg.arg not in SEAMS or arg.annotation is None:
                    continue
                checked += 1
                annotation = ast.unparse(arg.annotation)
                if "Any" in annotation and not annotation.startswith(
                    "dict[str, Any]"
                ):  # a JSON payload is data
                    loose.append(f"{path.relative_to(BOT)}:{node.lineno} {node.name}({arg.arg})")
    assert checked > 40  # the check sees the seams
    assert loose == []
