"""The knowledge base refuses broken input and says where the problem is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MINI_ENGINE, write_kb
from triage_bot.kb.loader import KnowledgeBaseError, collect_problems, load


def _errors(directory: Path) -> list[str]:
    _, problems = collect_problems(directory)
    return [str(p) for p in problems if p.level == "error"]


def test_valid_mini_kb_loads(mini_kb_dir: Path) -> None:
    kb = load(mini_kb_dir)
    assert [s.id for s in kb.signatures] == [
        "component.lora",
        "vllm.kv_cache_no_memory",
        "vllm.engine_core_dead",
    ]
    assert kb.engines["vllm"].name == "vLLM"
    assert kb.source["vllm.engine_core_dead"][0] == "vllm.yaml"


def test_unknown_key_is_an_error_with_line(tmp_path: Path) -> None:
    broken = MINI_ENGINE.replace(
        "    severity: high\n    patterns:", "    severity: high\n    colour: red\n    patterns:", 1
    )
    errors = _errors(write_kb(tmp_path, **{"vllm.yaml": broken}))
    assert any("colour" in e and "Extra inputs" in e and e.startswith("vllm.yaml:12:") for e in errors), (
        errors
    )


def test_duplicate_id_is_an_error(tmp_path: Path) -> None:
    doubled = MINI_ENGINE.replace("id: vllm.engine_core_dead", "id: vllm.kv_cache_no_memory")
    errors = _errors(write_kb(tmp_path, **{"vllm.yaml": doubled}))
    assert any("duplicate id 'vllm.kv_cache_no_memory'" in e for e in errors), errors


def test_regex_that_does_not_compile_is_an_error(tmp_path: Path) -> None:
    broken = MINI_ENGINE.replace("'EngineDeadError'", "'EngineDead(Error'")
    errors = _errors(write_kb(tmp_path, **{"vllm.yaml": broken}))
    assert any("does not compile" in e and "EngineDead(Error" in e for e in errors), errors


def test_backtracking_only_syntax_is_rejected(tmp_path: Path) -> None:
    broken = MINI_ENGINE.replace("'EngineDeadError'", "'(a)\\1'")
    errors = _errors(write_kb(tmp_path, **{"vllm.yaml": broken}))
    assert any("does not compile in RE2" in e for e in errors), errors


def test_template_that_does_not_parse_is_an_error(tmp_path: Path) -> None:
    broken = MINI_ENGINE.replace("recovery: Look above.", "recovery: 'Look {{ above'")
    errors = _errors(write_kb(tmp_path, **{"vllm.yaml": broken}))
    assert any("recovery template" in e for e in errors), errors


def test_taxonomy_id_without_signature_is_an_error(tmp_path: Path) -> None:
    errors = _errors(write_kb(tmp_path, **{"taxonomy.yaml": "ids: [vllm.kv_cache_no_memory, vllm.nope]\n"}))
    assert any(
        "taxonomy id 'vllm.nope' has no signature" in e and e.startswith("taxonomy.yaml:1:") for e in errors
    )


def test_signatures_beyond_taxonomy_are_welcome(tmp_path: Path) -> None:
    kb = load(write_kb(tmp_path, **{"taxonomy.yaml": "ids: [vllm.kv_cache_no_memory]\n"}))
    assert "component.lora" in kb.by_id


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    errors = _errors(write_kb(tmp_path, **{"component.yaml": "signatures:\n  - id: [unclosed\n"}))
    assert any(e.startswith("component.yaml:") and "YAML" in e for e in errors), errors


def test_family_without_protocol_is_an_error(tmp_path: Path) -> None:
    from tests.conftest import MINI_FAMILY

    no_protocol = (
        MINI_FAMILY.split("    protocol:")[0] + "    faq: LoRA failures are usually adapter mismatches.\n"
    )
    errors = _errors(write_kb(tmp_path, **{"component.yaml": no_protocol}))
    assert any("protocol" in e for e in errors), errors


def test_load_raises_with_every_problem(tmp_path: Path) -> None:
    broken = MINI_ENGINE.replace("'EngineDeadError'", "'EngineDead(Error'")
    with pytest.raises(KnowledgeBaseError) as info:
        load(write_kb(tmp_path, **{"vllm.yaml": broken, "taxonomy.yaml": "ids: [x.y]\n"}))
    assert len(info.value.problems) >= 2


def test_bundled_kb_covers_the_shared_taxonomy() -> None:
    """Every id in the shared TAXONOMY.md has a signature in the bundled knowledge base."""
    import re

    from tests.conftest import CORPUS

    taxonomy = CORPUS / "TAXONOMY.md"
    if not taxonomy.exists():
        pytest.skip("shared corpus not present")
    ids = set(re.findall(r"^\| `([a-z0-9_.]+)` \|", taxonomy.read_text(), re.M))
    kb = load()
    assert len(ids) == 120
    assert ids <= set(kb.by_id), sorted(ids - set(kb.by_id))
