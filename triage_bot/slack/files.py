"""Read attached logs and snippets: `files.info`, then the `url_private` download with the bot token.

Bounded on purpose: at most `files_per_message` files, each at most `file_max_bytes` (checked on
the size Slack reports and again while streaming, so a wrong size cannot make the bot read a
huge file), and only text. Anything refused gets a reason a person can act on ("the file is
12.0 MB, the bot reads up to 2.0 MB: attach the last part of the log"), which the explicit
surfaces show and the passive one keeps to itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from triage_bot.slack.text import escape

log = logging.getLogger(__name__)

TEXT_TYPES = (
    "text/",
    "application/json",
    "application/x-ndjson",
    "application/xml",
    "application/x-yaml",
    "application/yaml",
    "application/x-sh",
    "application/javascript",
)
TEXT_FILETYPES = {
    "text",
    "log",
    "python",
    "shell",
    "json",
    "yaml",
    "markdown",
    "post",
    "csv",
    "xml",
    "diff",
    "javascript",
    "c",
    "cpp",
    "go",
    "rust",
    "toml",
    "ini",
    "space",
    "auto",
}
SNIFF_BYTES = 8192


@dataclass
class FileText:
    """What the attached files contributed: their text, and why any file was not read."""

    text: str = ""
    problems: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def human_size(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MB"
    if size >= 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size} bytes"


def looks_binary(head: bytes) -> bool:
    """NUL bytes, or mostly undecodable / control bytes in the first few KB."""
    sample = head[:SNIFF_BYTES]
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    text = sample.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") + sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f\x1b")
    return bad > max(8, len(text) // 20)


def _is_text_type(info: dict[str, Any]) -> bool:
    mimetype = str(info.get("mimetype") or "")
    filetype = str(info.get("filetype") or "")
    return mimetype.startswith(TEXT_TYPES) or filetype in TEXT_FILETYPES


class FileReader:
    """Fetches attached files for triage, within the configured bounds."""

    def __init__(
        self, max_bytes: int, max_files: int, api_url: str = "https://slack.com/api/", timeout: float = 15.0
    ):
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.timeout = timeout
        self.api_host = urlsplit(api_url).hostname or ""

    def read(self, client: WebClient, files: list[dict[str, Any]]) -> FileText:
        result = FileText()
        if len(files) > self.max_files:
            result.problems.append(f"Only the first {self.max_files} of {len(files)} files were read.")
        parts: list[str] = []
        for attached in files[: self.max_files]:
            text, problem = self._read_one(client, attached)
            name = str(attached.get("name") or attached.get("title") or attached.get("id") or "file")
            if problem:
                result.problems.append(f"`{escape(name)}`: {escape(problem)}")
            if text:
                parts.append(text)
                result.names.append(name)
        result.text = "\n".join(parts)
        return result

    def _read_one(self, client: WebClient, attached: dict[str, Any]) -> tuple[str, str]:
        file_id = attached.get("id")
        if not file_id:
            return "", "no file id in the message"
        try:
            info = client.files_info(file=file_id)["file"]
        except SlackApiError as exc:
            error = exc.response.get("error", "error")
            return "", f"Slack would not describe it ({error}); the bot needs the files:read scope"
        size = int(info.get("size") or 0)
        if size > self.max_bytes:
            return "", (
                f"the file is {human_size(size)}; the bot reads files up to {human_size(self.max_bytes)}. "
                "Attach or paste the part of the log around the first error."
            )
        if not _is_text_type(info) and info.get("mimetype"):
            return "", (
                f"it is a {info.get('mimetype')} file, not text; attach the log as a .log or .txt file "
                "or paste it in a code block."
            )
        url = info.get("url_private_download") or info.get("url_private")
        if not url:
            return "", "Slack gave no download link for it"
        # the bot token goes only to Slack: over https, or to the configured API host (a proxy, the stand-in)
        parts = urlsplit(url)
        if parts.scheme != "https" and parts.hostname != self.api_host:
            return "", "its download link is not a Slack https link; not sent the bot token"
        return self._download(url, client.token or "")

    def _download(self, url: str, token: str) -> tuple[str, str]:
        data = bytearray()
        try:
            with httpx.stream(
                "GET",
                url,
                headers={"Authorization": f"Bearer {token}"},
                timeout=self.timeout,
                follow_redirects=False,
            ) as response:
                if response.status_code != 200:
                    return "", f"the download failed (HTTP {response.status_code})"
                if response.headers.get("content-type", "").startswith("text/html"):
                    # Slack serves its sign-in page when the token may not read the file
                    return (
                        "",
                        "the download returned Slack's sign-in page; the bot needs the files:read scope",
                    )
                for chunk in response.iter_bytes():
                    data.extend(chunk)
                    if len(data) > self.max_bytes:
                        return "", (
                            f"the file is larger than {human_size(self.max_bytes)}, the most the bot reads. "
                            "Attach or paste the part of the log around the first error."
                        )
        except httpx.HTTPError as exc:
            log.warning("file download failed: %s", exc)
            return "", f"the download failed ({type(exc).__name__})"
        if looks_binary(bytes(data)):
            return "", "it is a binary file, not text; attach the log as text or paste it in a code block."
        return bytes(data).decode("utf-8", errors="replace"), ""
