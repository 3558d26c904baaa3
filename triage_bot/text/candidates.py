"""Pick the lines of a paste that can carry a cause, and tell a cause from a wrapper.

A 200-line traceback holds a handful of lines that say what went wrong. The rest are frames,
source echo, progress bars and INFO logs. Fuzzy scoring runs only on the candidates found here,
and the wrapper list lets the matcher prefer the root cause over the line that merely reports
that something below it died.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import re2

from triage_bot.kb.regex import compile_pattern
from triage_bot.text.normalize import Line, Normalized, is_source_echo

MAX_CANDIDATES = 40
MAX_CANDIDATE_CHARS = 240

# Lines that report a failure without naming it: the cause is elsewhere, usually above.
WRAPPER_LINES = re.compile(
    r"EngineDeadError|AsyncEngineDeadError|Background loop has errored|Engine core initialization failed"
    r"|\bhit an exception"
    r"|EngineCore failed to start|Scheduler hit an exception|TpModelWorkerClient hit an exception"
    r"|Received sigquit from a child proces|SIGQUIT received|It usually means (?:the|one) child failed"
    r"|MPI_ABORT was invoked|mpirun detected that one or more processes|Primary job\s+terminated"
    r"|Aborted \(core dumped\)|Executor worker returned error|Encountered an error in forward(?:Async|Sync)? function"
    r"|Error executing method|WorkerProc hit an exception|Exception in worker|The above exception was the direct cause"
    r"|During handling of the above exception|Traceback \(most recent call last\)|ERROR: Exception in ASGI application"
    r"|Failed core proc|Worker failed with error|MQLLMEngine is already dead|terminating server process"
)

_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_][\w.]{0,120}\.)?[A-Z]\w{0,80}(?:Error|Exception|Exit|Interrupt|Warning|Failure)\b:?"
)
_ERRORISH_RE2 = compile_pattern(
    r"(?i)\b(?:error|exception|fail(?:ed|ure)?|assert(?:ion)?|abort(?:ed)?|fatal|panic|segmentation fault|sigsegv"
    r"|sigkill|killed|out of memory|oom|timed? ?out|timeout|not found|no such|cannot|could not|unable to"
    r"|not supported|unsupported|invalid|mismatch|illegal|refused|denied|undefined symbol|core dumped|exceeds?"
    r"|too (?:long|large|small|old)|insufficient|not enough|deadlock|hang|stuck|watchdog|traceback)\b"
)
# an exception class named anywhere on a line (prose, markdown, a quoted title): "got **KeyError: 'x'**"
_EXCEPTION_NAMED_RE2 = compile_pattern(r"\b[A-Z][A-Za-z0-9_]*(?:Error|Exception)\b")
_TRT_ERROR_RE2 = compile_pattern(
    r"\[TensorRT-LLM\]\[(?:ERROR|WARNING)\]|\[TRT-LLM\] \[E\]|NCCL WARN|\[TRT\] \[E\]"
)
_NOISE = re.compile(
    r"^(?:Loading safetensors checkpoint shards|Capturing (?:CUDA graphs|batches)|\d{1,3}%\|)|it/s\]$"
    r"|^-{5,}$|^={5,}$|^\+[-+]{5,}\+?$"
)


@dataclass(frozen=True, slots=True)
class Candidate:
    line: Line
    score: float
    wrapper: bool


def _lines_hit(norm: Normalized, pattern: re2._Regexp) -> set[int]:
    """Indexes of the lines where `pattern` occurs: one linear RE2 pass over the whole paste."""
    return {norm.line_at(m.start()).number for m in pattern.finditer(norm.text)}


class LineWeights:
    """How likely each line states a failure (0 = not at all), computed for the whole paste at once."""

    def __init__(self, norm: Normalized):
        self.norm = norm
        self._errorish = _lines_hit(norm, _ERRORISH_RE2) if norm.text else set()
        self._trt = _lines_hit(norm, _TRT_ERROR_RE2) if norm.text else set()
        self._named = _lines_hit(norm, _EXCEPTION_NAMED_RE2) if norm.text else set()

    def weight(self, line: Line, previous: Line | None) -> float:
        text = line.text
        if line.is_frame or is_source_echo(line, previous) or _NOISE.search(text):
            return 0.0
        score = 0.0
        if _EXCEPTION.match(text):
            score += 3.0
        elif line.number in self._named:
            score += 1.5
        if line.number in self._trt:
            score += 3.0
        if line.level in ("ERROR", "CRITICAL", "FATAL"):
            score += 1.0
        elif line.level == "WARNING":
            score += 0.5
        if line.number in self._errorish:
            score += 1.5
        if line.level in ("INFO", "DEBUG") and score < 3.0:
            score *= 0.3
        return score


def find_candidates(norm: Normalized, limit: int = MAX_CANDIDATES) -> list[Candidate]:
    """The lines most likely to state a failure, in paste order, distinct after trimming."""
    weights = LineWeights(norm)
    scored: list[Candidate] = []
    seen: set[str] = set()
    previous: Line | None = None
    for line in norm.lines:
        weight = weights.weight(line, previous)
        previous = line
        if weight <= 0.0:
            continue
        text = line.text[:MAX_CANDIDATE_CHARS]
        if text in seen:
            continue
        seen.add(text)
        scored.append(Candidate(line, weight, bool(WRAPPER_LINES.search(text))))
    if len(scored) > limit:
        # keep the strongest lines, preferring later ones on ties (tracebacks end with the cause)
        best = sorted(scored, key=lambda c: (c.score, c.line.number), reverse=True)[:limit]
        scored = sorted(best, key=lambda c: c.line.number)
    return scored


_CUT_TAIL = re.compile(
    r'^(?:File "[^"]{1,500}", line \d+|Traceback \(most recent call last\):?|\.\.\.|…|.*\bhit an exception:?'
    r"(?: Traceback \(most recent call last\):?)?|The above exception was the direct cause.*|During handling.*)$"
)


def looks_cut(norm: Normalized) -> bool:
    """True when the paste stops inside a traceback, before the exception line."""
    if not norm.lines:
        return False
    tail = norm.lines[-3:]
    last = tail[-1]
    if _CUT_TAIL.match(last.text) or last.is_frame:
        return True
    if len(tail) >= 2 and tail[-2].is_frame:  # a frame followed by its source echo, then nothing
        return not _EXCEPTION.match(last.text) and not _ERRORISH_RE2.search(last.text)
    return False


def has_failure_signal(norm: Normalized) -> bool:
    """True when anything in the paste looks like a failure at all."""
    if any(line.is_frame for line in norm.lines):
        return True
    weights = LineWeights(norm)
    previous: Line | None = None
    for line in norm.lines:
        if weights.weight(line, previous) >= 1.0:  # an ERROR-level line, or error words
            return True
        previous = line
    return False


# the words of a problem report that carries no error text: "[Bug]", "memory leak", "wrong
# results", "it hangs", and the Chinese words for error, failure, crash, out of bounds, garbled
_PROBLEM_RE2 = compile_pattern(
    r"(?i)\[bug\]|\b(?:bug|leak(?:s|ing)?|broken|incorrect|wrong|garbled|gibberish|hangs?|hung|stuck|freez(?:es|ing)"
    r"|regression|crash(?:es|ed|ing)?|not work(?:ing)?|doesn.t work|does not work|won.t start|fails?)\b"
    r"|报错|错误|失败|崩溃|越界|异常|乱码|卡住|无法"
)


def reports_a_problem(norm: Normalized) -> bool:
    """True when the paste shows a failure, or its writer says there is one: the test for an
    explicit request that must get an answer. (Unprompted answers use `has_failure_signal`.)"""
    return has_failure_signal(norm) or bool(norm.text and _PROBLEM_RE2.search(norm.text))


_WORD = re.compile(r"[A-Za-z][a-z']*")
CHAT_MAX_LINES = 3
# words of someone talking about an error that is over or elsewhere; engines do not write about
# yesterday or in the past tense of a fix. Strong markers count double. A question or a plea for
# help means the person wants the answer after all.
_CHAT_WORDS = frozenset(
    [
        "fixed",
        "solved",
        "resolved",
        "gone",
        "was",
        "were",
        "yesterday",
        "earlier",
        "turned",
        "turns",
        "prints",
        "printed",
        "means",
        "because",
        "draft",
        "outage",
        "good",
    ]
)
_CHAT_STRONG = frozenset(["til", "btw", "fyi", "postmortem", "lgtm", "lol", "thanks", "thx", "imo", "afaik"])
_HELP_WORDS = frozenset(
    ["anyone", "help", "why", "how", "getting", "seeing", "keep", "keeps", "stuck", "any"]
)


def looks_like_chat(norm: Normalized, line: Line | None, span: tuple[int, int] | None) -> bool:
    """A short message that talks about an error rather than showing one.

    "fixed it, the OOM was a stray kernel: torch.OutOfMemoryError: CUDA out of memory is gone now"
    quotes a failure inside a sentence. Engines do not write about yesterday or in the first
    person, so the words around the matched message decide; pasted output (several lines, a log
    prefix, a frame) never counts as chat.
    """
    if line is None or span is None or len(norm.lines) > CHAT_MAX_LINES:
        return False
    if line.level or line.process or line.is_frame:
        return False
    text = line.text
    outside = (text[: span[0]] + " " + text[span[1] :]).lower()
    words = set(_WORD.findall(outside))
    if "?" in outside or words & _HELP_WORDS:
        return False
    return len(words & _CHAT_WORDS) + 2 * len(words & _CHAT_STRONG) >= 2


# The issue templates of vLLM, SGLang and TensorRT-LLM open a request for change with a tag in the
# title. Such a message discusses a failure (often quoting its error) to ask for something new; it is
# not someone stuck on one, so the bot never answers it unprompted (asked, it still answers).
_CHANGE_REQUEST = re.compile(
    r"\A\s*(\[(feat|feature( request)?|rfc|roadmap|docs?|documentation|discussion|tracking|tracker|proposal)\]"
    # and a conventional-commit title of a change that is not a fix ("feat(api): ...", "docs: ...")
    r"|(feat|docs|refactor|chore|test|ci|perf|build|style)(\([^)\n]{0,40}\))?!?:"
    # TensorRT-LLM's pull-request titles: "[TRTLLM-1234][feat] ...", "[https://nvbugs/5][fix] ..."
    r"|\[[^\]\n]{1,60}\]\[(feat|fix|chore|docs?|test|infra|perf|refactor|ci|misc|none)\])",
    re.I,
)
# the headings of the trackers' feature-request and pull-request templates (vLLM "The feature,
# motivation and pitch", "Purpose"/"Test Plan"; SGLang "Motivation"/"Modifications"; TensorRT-LLM
# "Description"/"Test Coverage") and of their bug templates, which a failure report keeps
_CHANGE_TEMPLATE = re.compile(
    r"(?im)^#{2,3} *(?:🚀 *)?(?:the feature, motivation and pitch|motivation|modifications|purpose"
    r"|test plan|test coverage|pr checklist|related resources)\s*$"
    # the Kubernetes projects' pull-request template (kserve, LeaderWorkerSet, the gateway API)
    r"|^\*\*what (?:this pr does|type of pr is this)"
)
_BUG_TEMPLATE = re.compile(
    r"(?im)^#{2,3} *(?:🐛 *)?(?:describe the bug|reproduction|your current environment|system info"
    r"|expected behaviou?r|actual behaviou?r|environment)\s*$"
)


def is_change_request(norm: Normalized) -> bool:
    """Is the message a request for change: a tracker's request tag or a pull-request title
    ("[Feature]: ...", "[RFC]", "feat:", "[TRTLLM-1][fix]"), or a feature or pull-request
    template without a bug template's headings?"""
    if not norm.lines:
        return False
    if _CHANGE_REQUEST.match(norm.lines[0].text):
        return True
    text = norm.text[:20_000]
    return bool(_CHANGE_TEMPLATE.search(text)) and not _BUG_TEMPLATE.search(text)
