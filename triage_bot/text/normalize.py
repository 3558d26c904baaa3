"""Turn a raw paste into clean lines: what the engine printed, without the layers around it.

People paste through Slack (code fences, HTML entities, `>` quotes), terminals (ANSI colours,
sometimes in caret form `^[[36m`), log shippers (timestamps, k8s and docker-compose prefixes) and
multi-process engines (`(VllmWorker rank=1 pid=…)`, `[… TP3]`, `[rank6]:`). Patterns are written
for the message itself, so every one of those layers is removed here, line by line. The original
line is kept beside the clean one for display.

All regexes here are linear-time in practice: no nested quantifiers, bounded repeats, and they
run on single lines that are capped in length.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import NamedTuple

from triage_bot.kb.regex import compile_pattern

# larger pastes keep their head (start-up arguments), their tail (the traceback) and the error lines
# between: a Slack message is at most 40,000 characters, so only files are cut, and every pattern
# then runs on at most ~72,000 characters (a 1 MiB file: 157 -> ~80 ms with 200,000 kept)
MAX_CHARS = 72_000
HEAD_CHARS = 24_000
MIDDLE_LINES = 400  # error-looking lines kept from the part of a huge paste that is cut
MAX_LINE = 4_000  # a longer line keeps its start and its end: no engine message is that long
LINE_HEAD = 1_000
MAX_LINES = 5_000
_MIDDLE_WORDS = r"(?i)error|exception|traceback|fail|fatal|abort|assert|killed|out of memory|timed? ?out|warn"
_MIDDLE_KEEP = compile_pattern(_MIDDLE_WORDS)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ANSI = re.compile(
    r"\x1b\[[0-9;?]{0,20}[ -/]{0,3}[@-~]|\x1b[()][0-9A-Za-z]|\^\[\[[0-9;]{0,20}[A-Za-z]|\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}m"
)
_FENCE = re.compile(r"```[a-zA-Z0-9_+-]{0,20}")
_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^|>\s]{1,2000})(?:\|([^>]{0,500}))?>")
_QUOTE = re.compile(r"^(?:>|&gt;)\s?")
_LEVEL_WORDS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"

# Each prefix pattern is tried at the start of a line; several may be stacked, so they are applied
# repeatedly until none matches. Named group `level` records a log level when the prefix has one.
_PREFIXES: list[re.Pattern[str]] = [
    # editor / less line numbers in front of a bracketed log line: "16433 [2026-07-23 ..."
    re.compile(r"^\d{1,7}\s+(?=\[)"),
    # k8s / GKE shipper: "INFO 2025-03-30T23:51:21.299840450Z "
    re.compile(rf"^(?P<level>{_LEVEL_WORDS})\s+\d{{4}}-\d\d-\d\dT[\d:.]{{6,20}}Z?\s+"),
    re.compile(r"^\[resource\.labels\.[^\]]{1,80}\]\s*"),
    # docker compose: "vllm-1  | "
    re.compile(r"^[\w.-]{1,60}-\d{1,3}\s+\|\s?"),
    # process tags: "(VllmWorker rank=1 pid=2978)", "(EngineCore_DP0 pid=12)", "(RayWorkerWrapper pid=4823, ip=…)"
    re.compile(r"^\((?P<proc>[A-Za-z_][\w]{0,40})[^)\n]{0,120}?pid=\d+[^)\n]{0,80}\)\s*"),
    re.compile(r"^\((?P<proc>APIServer|EngineCore\w{0,10}|VllmWorker\w{0,20}|Worker\w{0,10})\)\s*"),
    # vLLM logger: "ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] " / "INFO 05-13 10:46:43 [loggers.py:271] "
    re.compile(
        rf"^(?P<level>{_LEVEL_WORDS})\s+\d\d-\d\d\s+[\d:.]{{5,15}}\s+(?:\[[^\]\n]{{1,80}}\]|[\w./-]{{1,80}}:\d{{1,6}}\])\s?"
    ),
    # SGLang: "[2025-01-02 10:00:00 TP3] ", "[2025-06-23 15:07:01 DP2 TP2 EP2] ", or missing "["
    re.compile(
        r"^\[?\d{4}-\d\d-\d\d[ T][\d:.,]{5,15}(?:Z|[+-]\d\d:?\d\d)?(?:\s+(?P<proc>(?:[A-Z]{1,4}\d{1,4}\s?){1,5}))?\]\s?"
    ),
    # python logging: "2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.x: " / "2024-01-01 00:00:00,000 - name - ERROR - "
    re.compile(rf"^\d{{4}}-\d\d-\d\d[ T][\d:.,]{{5,15}}\s+\[(?P<level>{_LEVEL_WORDS})\]\s+[\w.]{{1,120}}:\s"),
    re.compile(
        rf"^\d{{4}}-\d\d-\d\d[ T][\d:.,]{{5,15}}\s+-\s+[\w.]{{1,80}}\s+-\s+(?P<level>{_LEVEL_WORDS})\s+-\s"
    ),
    # Ray C++: "[2025-02-11 21:50:49,831 E 4823 4823] logging.cc:460: "
    re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,.]{5,15} (?P<level>[IWEF]) \d+ \d+\] [\w.]{1,60}:\d{1,6}:\s?"),
    # torch distributed: "[rank6]:[E207 10:00:00.123 ProcessGroupNCCL.cpp:1234] " and "[rank0]: "
    re.compile(r"^\[rank\d{1,5}\]:\s?"),
    re.compile(r"^\[(?P<level>[IWEF])\d{3,4} [\d:.]{5,20}(?: \d+)? [\w.]{1,80}:\d{1,6}\]\s?"),
    # glog (Triton, TensorRT): "I0524 03:33:13.130393 2517 server.cc:677] "
    re.compile(r"^(?P<level>[IWEF])\d{4} [\d:.]{5,20}\s+\d+\s+[\w.]{1,80}:\d{1,6}\]\s?"),
    # TensorRT-LLM python logger timestamp: "[11/21/2024-10:26:10] "
    re.compile(r"^\[\d\d/\d\d/\d{4}-[\d:]{5,8}\]\s?"),
    # ISO or plain timestamps and dmesg: "2024-04-29T14:55:41,678628+02:00 ", "[  492.663352] "
    re.compile(r"^\d{4}[-/]\d\d[-/]\d\d[ T][\d:.,]{5,20}(?:[+-]\d\d:?\d\d|Z)?\s+(?:\|\s*)?"),
    re.compile(r"^\[\s{0,8}\d{1,9}\.\d{3,9}\]\s?"),
    # syslog: "Jan 12 10:00:00 host kernel: "
    re.compile(r"^[A-Z][a-z]{2}\s{1,2}\d{1,2} [\d:]{8} [\w.-]{1,80} [\w.\[\]-]{1,80}:\s"),
    # bare level words some loggers print: "ERROR: ", "[ERROR] ", "E   "
    re.compile(rf"^\[(?P<level>{_LEVEL_WORDS})\]\s"),
    re.compile(rf"^(?P<level>{_LEVEL_WORDS}):\s{{1,8}}"),
    # C++ backtrace frame numbers and addresses: "1       0x7f6ba0718329 "
    re.compile(r"^#?\d{1,3}\s+0x[0-9a-fA-F]{4,16}\s+"),
]

# Frame lines of a Python traceback and the source echo after them carry no message of their own.
_LOG_SOURCE = re.compile(r"([\w.-]{1,80}\.(?:py|cc|cpp|cu|h)):\d{1,6}")
MAX_SOURCES = 64
_FRAME = re.compile(r'^File "[^"\n]{1,500}", line \d+')
_CARETS = re.compile(r"^[\^~\s]{1,400}$")


class Line(NamedTuple):
    """One line of the paste: clean text, its original, and what its prefix told us.

    A named tuple: a 40,000-character paste makes hundreds of these, and a tuple is the cheapest
    immutable record to build.
    """

    number: int  # 0-based position in the paste
    text: str
    raw: str
    level: str | None
    process: str | None
    is_frame: bool


@dataclass(frozen=True, slots=True)
class Normalized:
    lines: tuple[Line, ...]
    text: str  # clean lines joined with "\n"; patterns run over this
    prefixed: str  # the same lines with their log prefixes kept; engine clues run over this
    offsets: tuple[int, ...]  # start of each line in `text`
    truncated: bool
    original_chars: int
    log_sources: tuple[str, ...] = ()  # source files named in log prefixes, e.g. hermes_tool_parser.py

    def line_at(self, offset: int) -> Line:
        """The line that contains character `offset` of `text`."""
        lo, hi = 0, len(self.offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.offsets[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return self.lines[lo]


def decode(data: bytes | str) -> str:
    """Bytes from a file or a socket become text; invalid UTF-8 is replaced, never fatal."""
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    try:
        data.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from a broken client: replace them
        return data.encode("utf-8", errors="replace").decode("utf-8")
    return data


def _unescape_slack(text: str) -> str:
    text = _SLACK_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _combine(
    patterns: list[re.Pattern[str]],
) -> tuple[re.Pattern[str], dict[str, tuple[str | None, str | None]]]:
    """One alternation of every prefix pattern, tried in order by the C engine in a single call.

    Each alternative is wrapped in a group `a<N>`; `lastgroup` names the one that matched, and the
    table gives its level and process group names, so no other group is inspected.
    """
    parts = []
    table: dict[str, tuple[str | None, str | None]] = {}
    for number, pattern in enumerate(patterns):
        source = pattern.pattern.removeprefix("^")
        level = f"level_{number}" if "(?P<level>" in source else None
        proc = f"proc_{number}" if "(?P<proc>" in source else None
        source = source.replace("(?P<level>", f"(?P<level_{number}>").replace(
            "(?P<proc>", f"(?P<proc_{number}>"
        )
        parts.append(f"(?P<a{number}>{source})")
        table[f"a{number}"] = (level, proc)
    return re.compile("^(?:" + "|".join(parts) + ")"), table


_ANY_PREFIX, _PREFIX_GROUPS = _combine(_PREFIXES)


def strip_prefixes(line: str) -> tuple[str, str | None, str | None]:
    """Remove stacked log prefixes from one line; return (text, level, process)."""
    level: str | None = None
    process: str | None = None
    for _ in range(8):
        match = _ANY_PREFIX.match(line)
        if not match or match.end() == 0:
            break
        level_group, proc_group = _PREFIX_GROUPS[match.lastgroup or ""]
        if level_group and match.group(level_group):
            level = _more_severe(level, _canonical_level(match.group(level_group)))
        if proc_group and process is None and match.group(proc_group):
            process = match.group(proc_group).strip()
        line = line[match.end() :].lstrip()
    return line, level, process


_SEVERITY = {"DEBUG": 0, "INFO": 1, "WARNING": 2, "ERROR": 3, "CRITICAL": 4, "FATAL": 4}


def _more_severe(current: str | None, new: str) -> str:
    if current is None or _SEVERITY.get(new, 0) > _SEVERITY.get(current, 0):
        return new
    return current


def _canonical_level(word: str) -> str:
    word = word.upper()
    return {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL", "WARN": "WARNING"}.get(word, word)


def _cut_middle(text: str) -> str:
    """Keep a huge paste's head and tail, and the error-looking lines of the middle (bounded).

    RE2 finds the lines that hold a keep-word in one linear pass (a case-insensitive Python
    alternation, run line by line, took 81% of the time of a 1 MiB paste); a line is kept when a
    keep-word lies within its first `MAX_LINE` characters, the part of it that is kept.
    """
    tail_chars = MAX_CHARS - HEAD_CHARS
    head, middle, tail = text[:HEAD_CHARS], text[HEAD_CHARS:-tail_chars], text[-tail_chars:]
    kept: list[str] = []
    line_end = -1
    for found in _MIDDLE_KEEP.finditer(middle):
        if found.start() <= line_end:
            continue  # another keep-word on a line already looked at
        line_start = middle.rfind("\n", 0, found.start()) + 1
        line_end = middle.find("\n", found.end())
        line_end = len(middle) if line_end < 0 else line_end
        line = middle[line_start:line_end][:MAX_LINE]
        if _MIDDLE_KEEP.search(line):
            kept.append(line)
            if len(kept) >= MIDDLE_LINES:
                break
    return "\n".join([head, *kept, tail])


def normalize(data: bytes | str) -> Normalized:
    """Clean a paste for matching. Never raises on any input; bounded in time by the caps above."""
    text = decode(data)
    original_chars = len(text)
    truncated = False
    if len(text) > MAX_CHARS:
        text = _cut_middle(text)
        truncated = True
    if not text.isascii():
        # full-width punctuation and letters (`：`, `Ｅｒｒｏｒ`) from CJK input methods become ASCII
        text = unicodedata.normalize("NFKC", text)
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _ANSI.sub("", text)
    text = _FENCE.sub("\n", text)
    text = _unescape_slack(text)

    raw_lines = text.split("\n")
    if len(raw_lines) > MAX_LINES:
        keep_head = MAX_LINES // 5
        raw_lines = raw_lines[:keep_head] + raw_lines[-(MAX_LINES - keep_head) :]
        truncated = True

    lines: list[Line] = []
    offsets: list[int] = []
    sources: dict[str, None] = {}
    seen_prefixes: set[str] = set()
    position = 0
    for raw in raw_lines:
        if len(raw) > MAX_LINE:
            raw = raw[:LINE_HEAD] + " … " + raw[-(MAX_LINE - LINE_HEAD) :]
            truncated = True
        stripped = raw.strip()
        if stripped[:1] in (">", "&"):
            stripped = _QUOTE.sub("", stripped)
        clean, level, process = strip_prefixes(stripped)
        if len(clean) < len(stripped):
            # the logger's own file (`[hermes_tool_parser.py:157]`) says which component spoke;
            # prefixes repeat line after line, so each distinct one is read once
            prefix = stripped[: len(stripped) - len(clean)]
            if prefix not in seen_prefixes:
                seen_prefixes.add(prefix)
                for source in _LOG_SOURCE.findall(prefix):
                    sources.setdefault(source, None)
        clean = clean.strip()
        if not clean:
            continue
        is_frame = clean.startswith("File ") and _FRAME.match(clean) is not None
        lines.append(Line(len(lines), clean, raw, level, process, is_frame))
        offsets.append(position)
        position += len(clean) + 1
    joined = "\n".join(line.text for line in lines)
    prefixed = "\n".join(line.raw for line in lines)
    return Normalized(
        tuple(lines),
        joined,
        prefixed,
        tuple(offsets),
        truncated,
        original_chars,
        tuple(sources)[:MAX_SOURCES],
    )


def is_source_echo(line: Line, previous: Line | None) -> bool:
    """True for the code line Python prints under a frame, and for caret markers."""
    if _CARETS.match(line.text):
        return True
    return previous is not None and previous.is_frame
