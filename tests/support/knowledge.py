"""A tiny knowledge base for tests that load one (write_kb and its files), and where the shared corpus lives."""

from __future__ import annotations

import textwrap
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

MINI_ENGINE = textwrap.dedent(
    """\
    engine:
      id: vllm
      name: vLLM
      launch: ["vllm serve"]
      detect:
        - {pattern: 'vllm/', weight: 2}
      matrix: {kv_cache: paged}
    signatures:
      - id: vllm.kv_cache_no_memory
        engine: vllm
        title: No memory for KV cache blocks
        severity: high
        patterns:
          - 'No available memory for the cache blocks'
        messages: ["No available memory for the cache blocks. Try increasing gpu_memory_utilization."]
        examples:
          - "ValueError: No available memory for the cache blocks."
          - "No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
        cause: The weights and activations left no room for the KV cache blocks.
        recovery: |
          Raise the memory share:
          $ vllm serve {{ v.model }} --gpu-memory-utilization {{ (v.util + 0.05) | fixed(2) }}
        faq: Raise --gpu-memory-utilization or use a smaller model.
      - id: vllm.engine_core_dead
        engine: vllm
        title: EngineCore died
        severity: high
        wrapper: true
        patterns: ['EngineDeadError']
        messages: ["EngineDeadError: EngineCore encountered an issue."]
        examples: ["vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.", "EngineDeadError"]
        cause: A wrapper raised after the engine core process died; the cause is above it.
        recovery: Look above.
        faq: Find the first error above the EngineDeadError.
    """
)
MINI_FAMILY = textwrap.dedent(
    """\
    signatures:
      - id: component.lora
        engine: any
        title: LoRA adapter trouble
        severity: medium
        evidence:
          - {pattern: 'lora/', weight: 1.0}
        examples: ["File \\"vllm/lora/models.py\\", line 1", "File \\"vllm/lora/worker_manager.py\\", line 9"]
        cause: A LoRA adapter failed to load or apply in the engine.
        recovery: "$ vllm serve m  # without --enable-lora"
        protocol:
          confirm: ["Run without --enable-lora."]
          collect: ["adapter config"]
          workarounds: ["Merge the adapter."]
          report: {default: "versions and adapter"}
        faq: LoRA failures are usually adapter/config mismatches.
    """
)
MINI_FAQ = textwrap.dedent(
    """\
    matrix_dimensions: [{key: kv_cache, title: KV cache management}]
    faq:
      - id: gpu_mem
        question: What does gpu-memory-utilization mean?
        answer: The fraction of total GPU memory one vLLM instance may use.
    """
)
MINI_TAXONOMY = "ids: [vllm.kv_cache_no_memory, vllm.engine_core_dead, component.lora]\n"


def write_kb(directory: Path, **overrides: str) -> Path:
    files = {
        "vllm.yaml": MINI_ENGINE,
        "component.yaml": MINI_FAMILY,
        "faq.yaml": MINI_FAQ,
        "taxonomy.yaml": MINI_TAXONOMY,
    }
    files.update(overrides)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory
