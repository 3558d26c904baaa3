"""Secret redaction, applied to every piece of text before it is stored, logged or quoted back.

People paste whole logs and shell sessions into Slack, tokens included. Each rule replaces a
secret with `[REDACTED:<kind>]` so the history still says *what* was there. The patterns run on
RE2 (linear time, like the knowledge base) because they run over arbitrary pastes. Rules aim at
shapes that ordinary engine output does not have (a known prefix, or a `key=value` whose key names
a secret), so tracebacks, hex addresses, paths, hashes and "token usage: 0.93" pass unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import re2


class _Match(Protocol):
    """What a rule's replacement reads of an RE2 match (the wrapper ships no types)."""

    def group(self, index: int = 0, /) -> str: ...


_OPTIONS = re2.Options()
_OPTIONS.max_mem = 64 << 20  # the private-key rule's DFA needs more than the 8 MiB default on big pastes

# Identifier characters that may precede a secret-ish key name, as in OPENAI_API_KEY or aws_secret_access_key.
_KEY_NAMES = (
    r"(?:api[_-]?key|apikey|api[_-]?token|access[_-]?token|auth[_-]?token|refresh[_-]?token|id[_-]?token"
    r"|secret[_-]?access[_-]?key|access[_-]?key(?:[_-]?id)?|secret[_-]?key|private[_-]?key|client[_-]?secret"
    r"|secret|password|passwd|passphrase|token|session[_-]?key|amz-signature|amz-security-token)"
)
_SECRET_CHARS = r"[A-Za-z0-9_\-./+=~]"
_PASSWORD_KEYS = ("password", "passwd", "passphrase", "secret")
_PROSE = {"argument", "parameter", "option", "options", "flag", "value", "required", "missing"}


def _keep_prefix(kind: str) -> Callable[[_Match], str]:
    """Keep group 1 (the label) and replace the rest of the match."""
    return lambda m: f"{m.group(1)}[REDACTED:{kind}]"


def _key_value(m: _Match, flag: bool = False) -> str:
    """Redact the value of `key=value` only when it can be a secret: numbers and short words stay."""
    label, quote, value = m.group(1), m.group(2), m.group(3)
    is_password = flag or any(word in label.lower() for word in _PASSWORD_KEYS)
    if value.lower() in {"none", "null", "true", "false", "empty"} or set(value) <= set(".*xX_-<>"):
        return m.group(0)  # placeholders: `...`, `***`, `xxx`
    if "[REDACTED" in value or value.startswith(
        ("$", "-", "/")
    ):  # done already, a shell variable, a flag, a path
        return m.group(0)
    numeric = value.replace(".", "", 1).replace("-", "", 1).isdigit()
    if numeric or (not is_password and len(value) < 8):
        return m.group(0)
    if flag and (value.lower() in _PROSE or (len(value) < 6 and not any(c.isdigit() for c in value))):
        return m.group(0)  # "--api-key is not set", "the --token option"
    return f"{label}{quote}[REDACTED:secret]"  # the closing quote is not part of the match


def _bearer(m: _Match) -> str:
    value = m.group(2)
    if len(value) < 12 and not any(ch.isdigit() for ch in value):  # "Bearer tokens are ..." is prose
        return m.group(0)
    return f"{m.group(1)}[REDACTED:bearer]"


# Order matters: specific shapes first, so the generic key=value rule sees "[REDACTED:...]" and skips.
_RULES: list[tuple[str, str | Callable[[_Match], str]]] = [
    # PEM private keys, whole block; an unterminated block (cut-off paste) is redacted to its end.
    (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----",
        "[REDACTED:private_key]",
    ),
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[A-Za-z0-9+/=:,\-\s]*", "[REDACTED:private_key]\n"),
    # Passwords in URLs: scheme://user:password@host keeps the user and host.
    # (the password may itself hold an '@': it ends at the last '@' before the host)
    (
        r"(\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@'\"\[\]]{0,128}:)[^\s/'\"\[\]]{1,256}@",
        lambda m: f"{m.group(1)}[REDACTED:password]@",
    ),
    # Slack: triage_bot/user/app/config tokens and incoming-webhook URLs.
    (r"\bxox[abposre]-[A-Za-z0-9-]{10,}", "[REDACTED:slack_token]"),
    (r"\bxapp-[0-9]+-[A-Za-z0-9-]{10,}", "[REDACTED:slack_token]"),
    (
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]+",
        _keep_prefix("slack_webhook"),
    ),
    # Hugging Face user and org tokens.
    (r"hf_[A-Za-z0-9]{30,}", "[REDACTED:hf_token]"),  # no \\b: the shape is distinctive, even glued on
    (r"\bapi_org_[A-Za-z0-9]{30,}", "[REDACTED:hf_token]"),
    # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), and the like.
    (r"\bsk-[A-Za-z0-9_\-]{20,}", "[REDACTED:api_key]"),
    # Other providers with a fixed prefix: GitHub, Google, NVIDIA NGC/build, Groq, Replicate, Stripe, GitLab.
    (r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}", "[REDACTED:api_key]"),
    (r"\bgithub_pat_[A-Za-z0-9_]{22,}", "[REDACTED:api_key]"),
    (r"\bglpat-[A-Za-z0-9_\-]{20,}", "[REDACTED:api_key]"),
    (r"\bAIza[0-9A-Za-z_\-]{35}", "[REDACTED:api_key]"),
    (r"\bnvapi-[A-Za-z0-9_\-]{20,}", "[REDACTED:api_key]"),
    (r"\bgsk_[A-Za-z0-9]{20,}", "[REDACTED:api_key]"),
    (r"\br8_[A-Za-z0-9]{30,}", "[REDACTED:api_key]"),
    (r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", "[REDACTED:api_key]"),
    # AWS access key ids (the secret has no prefix: it is caught by its key name below).
    (
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b",
        "[REDACTED:aws_access_key_id]",
    ),
    # JSON Web Tokens (header.payload.signature).
    (r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "[REDACTED:jwt]"),
    # Authorization headers, whatever the scheme (Bearer, Basic, Token, Digest, raw key).
    (
        r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|apikey)\s+)?)"
        r"[^\s\"',;]+",
        _keep_prefix("auth"),
    ),
    (
        r"(?i)(\b(?:x-api-key|api-key|x-auth-token|private-token)[\"']?\s*:\s*[\"']?)[^\s\"',;]+",
        _keep_prefix("api_key"),
    ),
    (r"(?i)(\bbearer\s+)([A-Za-z0-9\-._~+/]+=*)", _bearer),
    # Cookie headers: every value in them is a session credential
    (r"(?i)(\b(?:set-)?cookie\s*:\s*)[^\r\n]+", _keep_prefix("cookie")),
    # mysql -pPASSWORD (the password glued to the flag)
    (r"(\bmysql(?:dump|admin|sh)?\b[^\n]{0,200}?\s-p)([^\s\"']+)", _keep_prefix("password")),
    # environment-style names that end in a credential word: AZURE_OPENAI_KEY=, SERVICE_KEY=, DB_PASS=
    (
        r"(\b[A-Z][A-Z0-9_]*_(?:KEY|SECRET|TOKEN|PASS|PASSWORD|PWD|CREDENTIALS?)[\"']?\s*[:=]\s*)([\"']?)"
        r"([A-Za-z0-9_\-./+=~:@]{12,})",
        _key_value,
    ),
    # curl -u user:password / --user user:password
    (r"((?:^|\s)(?:-u|--user)\s+[\"']?[^\s:\"']{1,128}:)[^\s\"']+", _keep_prefix("password")),
    # Command-line flags: vllm serve --api-key X, huggingface-cli login --token X.
    (
        r"(?i)((?:^|\s)--(?:[a-z0-9][a-z0-9_-]*)?(?:api[-_]key|token|password|secret)(?:=|\s+))([\"']?)([^\s\"']+)",
        lambda m: _key_value(m, flag=True),
    ),
    # key=value / key: value / "key": "value" where the key names a secret.
    (
        r"(?i)(\b[A-Za-z0-9_.\-]*" + _KEY_NAMES + r"[\"']?\s*[:=]\s*)([\"']?)(" + _SECRET_CHARS + r"+)",
        _key_value,
    ),
]

_COMPILED = [(re2.compile(pattern, _OPTIONS), repl) for pattern, repl in _RULES]
# One pass over the text finds which rules can apply at all; most text has no secret in it.
_ANY = re2.Set.SearchSet(_OPTIONS)
for _pattern, _ in _RULES:
    _ANY.Add(_pattern)
_ANY.Compile()


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by `[REDACTED:<kind>]`."""
    if not text:
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # RE2 needs valid UTF-8; lone surrogates become "?"
        text = text.encode("utf-8", "replace").decode("utf-8")
    hits = _ANY.Match(text)
    for index in sorted(hits or ()):
        pattern, repl = _COMPILED[index]
        text = pattern.sub(repl, text)
    return text


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dict keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value
