"""Values a recovery command needs: captured by signature patterns, or found anywhere in the paste.

Captured strings become numbers when they look like numbers, so templates can compute with them.
Launch flags the paste happens to contain (`--model`, `--tp`, `--gpu-memory-utilization`…) fill
in the command the bot suggests, so it reads like the user's own command with one value changed.
"""

from __future__ import annotations

import re

from triage_bot.kb.regex import compile_pattern

_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")

# name -> regex with one group; the first occurrence in the paste wins
_GLOBAL_SOURCES: dict[str, str] = {
    "model": (
        r"(?:--model(?:-path)?[= ]|\bmodel(?:_path)?=['\"]|\bvllm serve\s+|trtllm-serve(?: serve)?\s+)"
        r"(?P<v>[A-Za-z0-9_./~:-]{2,200})"
    ),
    "tp_size": r"(?:--tensor-parallel-size|--tp-size|--tp_size|--tp|\btensor_parallel_size|\btp_size)\s?[= ]\s?(?P<v>\d{1,3})\b",
    "pp_size": r"(?:--pipeline-parallel-size|--pp-size|--pp_size|--pp|\bpipeline_parallel_size|\bpp_size)\s?[= ]\s?(?P<v>\d{1,3})\b",
    "port": r"--port[= ](?P<v>\d{2,5})\b",
    "cli_gpu_memory_utilization": r"(?:--gpu-memory-utilization[= ]|\bgpu_memory_utilization=)(?P<v>0?\.\d+|1(?:\.0+)?)\b",
    "cli_mem_fraction_static": r"(?:--mem-fraction-static[= ]|\bmem_fraction_static=)(?P<v>0?\.\d+|1(?:\.0+)?)\b",
    "cli_max_model_len": r"(?:--max-model-len[= ]|\bmax_model_len=)(?P<v>\d{2,8})\b",
    "engine_dir": r"--engine[_-]dir[= ](?P<v>[A-Za-z0-9_./~-]{1,300})",
}


_GLOBALS = {name: compile_pattern(source) for name, source in _GLOBAL_SOURCES.items()}


class _AsPasted:
    """Prints as the paste wrote it ('1,024', '550.120', '0.90') while computing as a number."""

    text: str

    def __str__(self) -> str:
        return self.text


class IntText(_AsPasted, int):
    pass


class FloatText(_AsPasted, float):
    pass


def _as_pasted(cls: type[IntText] | type[FloatText], value: float, text: str) -> IntText | FloatText:
    number = cls(value)
    number.text = text
    return number


def coerce(value: str) -> object:
    """'1,024' -> 1024, '0.90' -> 0.9 (printing as written), anything else stays a string."""
    text = value.strip()
    if _NUMBER.match(text):
        plain = text.replace(",", "")
        return (
            _as_pasted(FloatText, float(plain), text)
            if "." in plain
            else _as_pasted(IntText, int(plain), text)
        )
    return text


def coerce_values(values: dict[str, str]) -> dict[str, object]:
    return {key: coerce(value) for key, value in values.items()}


def global_values(text: str) -> dict[str, object]:
    """Launch parameters found anywhere in the paste."""
    found: dict[str, object] = {}
    for name, pattern in _GLOBALS.items():
        match = pattern.search(text)
        if match:
            found[name] = coerce(match.group("v"))
    return found
