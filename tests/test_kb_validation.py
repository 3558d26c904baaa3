"""The knowledge base refuses broken input and says where the problem is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.knowledge import MINI_ENGINE, write_kb
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
    assert any("colour" in e and "Extra inputs" in e and e.startswith("vllm.yaml:13:") for e in errors), (
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
    from tests.support.knowledge import MINI_FAMILY

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

    from tests.support.knowledge import CORPUS

    taxonomy = CORPUS / "TAXONOMY.md"
    if not taxonomy.exists():
        pytest.skip("shared corpus not present")
    ids = set(re.findall(r"^\| `([a-z0-9_.]+)` \|", taxonomy.read_text(), re.M))
    kb = load()
    assert len(ids) == 120
    assert ids <= set(kb.by_id), sorted(ids - set(kb.by_id))


# -- engines come from the knowledge files' `engine:` headers ------------------------------------

GENERIC = """\
signatures:
  - id: generic.disk_full
    engine: generic
    title: No space left on device
    severity: high
    patterns: ['No space left on device']
    messages: ["OSError: [Errno 28] No space left on device"]
    examples: ["OSError: [Errno 28] No space left on device", "No space left on device: '/tmp/x'"]
    cause: The disk the engine writes to (cache, weights, logs) is full.
    recovery: "$ df -h"
    faq: Free space or point the cache at a larger disk.
"""


def test_a_generic_signature_needs_only_a_default_recovery(tmp_path: Path) -> None:
    kb = load(write_kb(tmp_path, **{"generic.yaml": GENERIC}), use_cache=False)
    assert kb.by_id["generic.disk_full"].recovery_template("vllm") == "$ df -h"


def test_an_engine_no_file_defines_is_an_error(tmp_path: Path) -> None:
    other = MINI_ENGINE.replace(
        "engine: vllm\n    title: EngineCore", "engine: lmdeploy\n    title: EngineCore"
    )
    errors = _errors(write_kb(tmp_path, **{"vllm.yaml": other}))
    assert any(
        "engine 'lmdeploy' is not defined by any knowledge file (engines: vllm" in e for e in errors
    ), errors


def test_an_id_prefix_that_is_no_engine_is_an_error(tmp_path: Path) -> None:
    other = MINI_ENGINE.replace("id: vllm.engine_core_dead", "id: lmdeploy.engine_core_dead")
    errors = _errors(write_kb(tmp_path, **{"vllm.yaml": other}))
    assert any("id prefix 'lmdeploy' is not a known tier" in e for e in errors), errors


def test_a_recovery_for_an_engine_no_file_defines_is_an_error(tmp_path: Path) -> None:
    per_engine = GENERIC.replace(
        'recovery: "$ df -h"', 'recovery: {default: "$ df -h", lmdeploy: "$ du -sh ~"}'
    )
    errors = _errors(write_kb(tmp_path, **{"generic.yaml": per_engine}))
    assert any(
        "generic.disk_full: per-engine texts name engines no knowledge file defines" in e for e in errors
    )


def test_an_extra_directory_adds_an_engine_and_may_not_hold_the_faq(tmp_path: Path) -> None:
    main = write_kb(tmp_path / "main")
    extra = tmp_path / "site"
    extra.mkdir()
    engine = MINI_ENGINE.replace("  id: vllm\n  name: vLLM", "  id: lmdeploy\n  name: LMDeploy")
    engine = engine.replace("vllm.", "lmdeploy.").replace("engine: vllm", "engine: lmdeploy")
    (extra / "lmdeploy.yaml").write_text(engine, encoding="utf-8")
    kb, problems = collect_problems(main, [extra])
    assert kb is not None, problems
    assert list(kb.engines) == ["vllm", "lmdeploy"]
    assert kb.source["lmdeploy.engine_core_dead"][0] == str(extra / "lmdeploy.yaml")
    (extra / "faq.yaml").write_text("faq: []\n", encoding="utf-8")
    kb, problems = collect_problems(main, [extra])
    assert kb is None
    assert any("faq.yaml" in str(p) and "main knowledge directory" in str(p) for p in problems)
