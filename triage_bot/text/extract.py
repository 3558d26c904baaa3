"""Values a recovery command needs: captured by signature patterns, or found anywhere in the paste.

Captured strings become numbers when they look like numbers, so templates can compute with them.
Launch flags the paste happens to contain (`--model`, `--tp`, `--gpu-memory-utilization`…) fill
in the command the bot suggests, so it reads like the user's own command with one value changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from triage_bot.kb.regex import compile_pattern

Regex = Any  # re2's compiled pattern: the wrapper ships no types

_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")

# A keyword or key as the engines' start-up dumps write it: a keyword argument
# (`ServerArgs(tp_size=2, ...)`, vLLM's `with config: ... max_seq_len=4096`) or a dict key (vLLM's
# `non-default args: {'max_model_len': 4096, ...}`).
_KEY = r"(?:\b|['\"])(?:{names})['\"]?\s*[:=]\s*"
_MODEL_WORD = re.compile(r"[/._\d-]")  # a model name or path has one; a word of prose ("just") has none


def _flag_or_key(flag: str, names: str, value: str) -> str:
    """`value` after a command-line flag (`flag` includes its separator) or after a keyword or a
    dict key (`names`), as one group `v`."""
    return rf"(?:{flag}|{_KEY.format(names=names)})(?P<v>{value})\b"


# name -> regex with one group `v`; the first occurrence in the paste wins
_GLOBAL_SOURCES: dict[str, str] = {
    # the engines' launch commands that take the model next (`vllm serve X`) come from their
    # knowledge headers (`launch:`): see value_patterns
    "model": (
        r"(?:--model(?:-path)?[= ]|\bmodel(?:_path)?=['\"]|['\"]model['\"]:\s*['\"]{launch})"
        r"(?P<v>[A-Za-z0-9_./~:][A-Za-z0-9_./~:-]{1,199})"  # never a flag: `trtllm-serve serve --tp_size 8`
    ),
    "tp_size": _flag_or_key(
        r"(?:--tensor-parallel-size|--tp-size|--tp_size|--tp)[= ]\s?",
        "tensor_parallel_size|tp_size",
        r"\d{1,3}",
    ),
    "pp_size": _flag_or_key(
        r"(?:--pipeline-parallel-size|--pp-size|--pp_size|--pp)[= ]\s?",
        "pipeline_parallel_size|pp_size",
        r"\d{1,3}",
    ),
    "port": r"--port[= ](?P<v>\d{2,5})\b",
    "cli_gpu_memory_utilization": _flag_or_key(
        r"--gpu-memory-utilization[= ]", "gpu_memory_utilization", r"0?\.\d+|1(?:\.0+)?"
    ),
    "cli_mem_fraction_static": _flag_or_key(
        r"--mem-fraction-static[= ]", "mem_fraction_static", r"0?\.\d+|1(?:\.0+)?"
    ),
    "cli_max_model_len": _flag_or_key(
        r"--max-model-len[= ]|--context-length[= ]|--max_seq_len[= ]",
        "max_model_len|max_seq_len|context_length",
        r"\d{2,8}",
    ),
    "engine_dir": r"--engine[_-]dir[= ](?P<v>[A-Za-z0-9_./~-]{1,300})",
}


def value_patterns(launch: Sequence[str] = ()) -> dict[str, Regex]:
    """The value patterns, with the launch commands that are followed by the model name."""
    commands = "".join(
        r"|\b" + r"\s+".join(re.escape(word) for word in command.split()) + r"\s+"
        for command in sorted(launch, key=len, reverse=True)  # the longest first: `x serve` before `x`
    )
    return {
        name: compile_pattern(source.replace("{launch}", commands) if name == "model" else source)
        for name, source in _GLOBAL_SOURCES.items()
    }


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


def global_values(text: str, patterns: Mapping[str, Regex] | None = None) -> dict[str, object]:
    """Launch parameters found anywhere in the paste (`patterns`: value_patterns of the knowledge
    base's engines; none given, no launch command counts)."""
    found: dict[str, object] = {}
    for name, pattern in (patterns if patterns is not None else _NO_LAUNCH).items():
        match = pattern.search(text)
        if match:
            value = match.group("v")
            if value and (name != "model" or _MODEL_WORD.search(value)):
                found[name] = coerce(value)
    return found


_NO_LAUNCH = value_patterns()
