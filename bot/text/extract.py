"""Values a recovery command needs: captured by signature patterns, or found anywhere in the paste.

Captured strings become numbers when they look like numbers, so templates can compute with them.
Launch flags the paste happens to contain (`--model`, `--tp`, `--gpu-memory-utilization`…) fill
in the command the bot suggests, so it reads like the user's own command with one value changed.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")

# name -> regex with one group; the first occurrence in the paste wins
_GLOBALS: dict[str, re.Pattern[str]] = {
    "model": re.compile(
        r"(?:--model(?:-path)?[= ]|\bmodel(?:_path)?=['\"]|\bvllm serve\s+|trtllm-serve(?: serve)?\s+)"
        r"(?P<v>[A-Za-z0-9_./~:-]{2,200})"
    ),
    "tp_size": re.compile(r"(?:--tensor-parallel-size|--tp-size|--tp_size|--tp|\btensor_parallel_size=|\btp_size=)[= ](?P<v>\d{1,3})\b"),
    "pp_size": re.compile(r"(?:--pipeline-parallel-size|--pp-size|--pp_size|--pp|\bpipeline_parallel_size=|\bpp_size=)[= ](?P<v>\d{1,3})\b"),
    "port": re.compile(r"--port[= ](?P<v>\d{2,5})\b"),
    "cli_gpu_memory_utilization": re.compile(r"(?:--gpu-memory-utilization[= ]|\bgpu_memory_utilization=)(?P<v>0?\.\d+|1(?:\.0+)?)\b"),
    "cli_mem_fraction_static": re.compile(r"(?:--mem-fraction-static[= ]|\bmem_fraction_static=)(?P<v>0?\.\d+|1(?:\.0+)?)\b"),
    "cli_max_model_len": re.compile(r"(?:--max-model-len[= ]|\bmax_model_len=)(?P<v>\d{2,8})\b"),
    "engine_dir": re.compile(r"--engine[_-]dir[= ](?P<v>[A-Za-z0-9_./~-]{1,300})"),
}


def coerce(value: str) -> object:
    """'1,024' -> 1024, '0.90' -> 0.9, anything else stays a string."""
    text = value.strip()
    if _NUMBER.match(text):
        plain = text.replace(",", "")
        return float(plain) if "." in plain else int(plain)
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
