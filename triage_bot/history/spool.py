"""A bounded local spool: writes wait here while the database is away, then replay in order.

Format: JSON Lines, one operation per line (`{"v": 1, "op": ..., "args": ..., "spooled_at": ...}`),
appended with fsync so an accepted record survives a crash. Text is redacted before it gets here.

Bound and policy: at most `max_records` lines or `max_bytes` bytes (default 10,000 / 64 MiB).
When full, a new write is *refused* with `SpoolFullError` and an ERROR log line naming it: the
oldest records (the start of an outage, usually the most telling) are kept and still replayed
in order, and the caller learns its write was not kept instead of it vanishing.

Replay (`drain`) applies lines oldest first and stops at the first sign that the database is
away again, keeping the rest. A line that fails for any other reason (corrupt JSON from a torn
write, an incident id that no longer exists) goes to `<path>.rejected` with the error, logged at
ERROR, so one bad line cannot block the queue and nothing disappears silently. The file is
compacted every `batch` applied lines, so a crash mid-replay replays at most one batch; records
carry ids that make those replays idempotent (see Recorder).

Threads share a process-wide lock; processes sharing a path serialise on `flock` of `<path>.lock`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from triage_bot.history.errors import SpoolFullError
from triage_bot.private_files import append_private

log = logging.getLogger(__name__)

DEFAULT_MAX_RECORDS = 10_000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class DrainResult:
    applied: int
    rejected: int
    remaining: int
    stopped: bool  # True when the database went away (again) before the spool was empty


class Spool:
    def __init__(
        self,
        path: str | Path,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        batch: int = 500,
    ) -> None:
        if max_records < 1 or max_bytes < 1 or batch < 1:
            raise ValueError("spool bounds and batch must be positive")
        self.path = Path(path)
        self.rejected_path = self.path.with_name(self.path.name + ".rejected")
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.batch = batch
        self._lock = threading.RLock()
        self._drain_lock = threading.Lock()
        self._count_key: tuple[int, int, int] | None = None
        self._count = 0

    # -- appending ---------------------------------------------------------------------------

    def append(self, op: str, args: dict[str, Any]) -> None:
        """Store one operation durably, or raise SpoolFullError (never drop quietly)."""
        line = json.dumps(
            {"v": 1, "op": op, "args": args, "spooled_at": datetime.now(UTC).isoformat()},
            ensure_ascii=False,
            allow_nan=False,
        )
        data = (line + "\n").encode("utf-8")
        with self._locked():
            count, size = self._stat_count()
            if count + 1 > self.max_records or size + len(data) > self.max_bytes:
                log.error(
                    "spool %s is full (%d records, %d bytes; bound %d records / %d bytes): "
                    "REFUSED %s %s; older spooled records are kept",
                    self.path,
                    count,
                    size,
                    self.max_records,
                    self.max_bytes,
                    op,
                    _describe(args),
                )
                raise SpoolFullError(
                    f"database unavailable and spool full ({count} records, {size} bytes): {op} not stored"
                )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if size and not self._ends_with_newline():
                    data = b"\n" + data  # a torn line from a crash stays a line of its own
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._remember_count(count + 1)
        log.warning(
            "database unavailable: spooled %s %s (%d waiting in %s)",
            op,
            _describe(args),
            count + 1,
            self.path,
        )

    # -- inspecting --------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._locked():
            return self._stat_count()[0]

    def is_empty(self) -> bool:
        """Cheap (one stat): called before every write to keep the order of writes."""
        try:
            return self.path.stat().st_size == 0
        except FileNotFoundError:
            return True

    def pending(self) -> list[tuple[str, dict[str, Any]]]:
        """The spooled operations, oldest first (for inspection and tests)."""
        with self._locked():
            lines = self.path.read_bytes().splitlines() if self.path.exists() else []
        result = []
        for raw in lines:
            with contextlib.suppress(ValueError, KeyError):
                entry = json.loads(raw)
                result.append((entry["op"], entry["args"]))
        return result

    # -- replaying ---------------------------------------------------------------------------

    def drain(
        self,
        apply: Callable[[str, dict[str, Any]], None],
        is_unavailable: Callable[[BaseException], bool],
    ) -> DrainResult:
        """Apply spooled operations oldest first; stop (keeping the rest) when the database is away."""
        if not self._drain_lock.acquire(blocking=False):
            return DrainResult(0, 0, len(self), stopped=False)  # another thread is draining
        try:
            with self._flock(".drain.lock", blocking=False) as got:
                if not got:
                    return DrainResult(0, 0, len(self), stopped=False)  # another process is draining
                return self._drain(apply, is_unavailable)
        finally:
            self._drain_lock.release()

    def _drain(
        self,
        apply: Callable[[str, dict[str, Any]], None],
        is_unavailable: Callable[[BaseException], bool],
    ) -> DrainResult:
        applied = rejected = 0
        while True:
            with self._locked():
                lines = self._head(self.batch)
            if not lines:
                return DrainResult(applied, rejected, 0, stopped=False)
            consumed = 0
            stopped = False
            for raw in lines:
                if not raw.strip():
                    consumed += len(raw)
                    continue
                try:
                    entry = json.loads(raw)
                    op, args = entry["op"], entry["args"]
                except (ValueError, KeyError, TypeError) as error:
                    self._reject(raw, f"unreadable spool line: {error}")
                    rejected += 1
                    consumed += len(raw)
                    continue
                try:
                    apply(op, args)
                except Exception as error:
                    if is_unavailable(error):
                        stopped = True
                        break
                    self._reject(raw, f"{type(error).__name__}: {error}")
                    rejected += 1
                else:
                    applied += 1
                consumed += len(raw)
            with self._locked():
                self._drop_head(consumed)
                remaining = self._stat_count()[0]
            if stopped:
                log.warning("database unavailable again: %d spooled records still waiting", remaining)
                return DrainResult(applied, rejected, remaining, stopped=True)
            if applied or rejected:
                log.info("spool replay: %d applied, %d rejected, %d waiting", applied, rejected, remaining)

    def _head(self, n: int) -> list[bytes]:
        """The first `n` lines with their newlines. Called under the lock, so a last line without
        a newline is a torn write from a crash, not one in progress: it is returned (and rejected)."""
        lines: list[bytes] = []
        try:
            with open(self.path, "rb") as handle:
                for raw in handle:
                    lines.append(raw)
                    if len(lines) >= n:
                        break
        except FileNotFoundError:
            pass
        return lines

    def _drop_head(self, nbytes: int) -> None:
        if nbytes == 0:
            return
        with open(self.path, "rb") as handle:
            handle.seek(nbytes)
            rest = handle.read()
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, rest)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        self._count_key = None

    def _reject(self, raw: bytes, reason: str) -> None:
        text = raw.decode("utf-8", errors="replace").rstrip("\n")
        if not text.strip():
            return
        log.error("spool: rejected a record (%s); kept in %s", reason, self.rejected_path)
        entry = {"rejected_at": datetime.now(UTC).isoformat(), "reason": reason, "line": text}
        with append_private(self.rejected_path) as handle:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    # -- helpers -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock, self._flock(".lock", blocking=True):
            yield

    @contextlib.contextmanager
    def _flock(self, suffix: str, blocking: bool) -> Iterator[bool]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(self.path.name + suffix), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _stat_count(self) -> tuple[int, int]:
        """(records, bytes); the count is cached against the file's identity and size."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return 0, 0
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key != self._count_key:
            with open(self.path, "rb") as handle:
                self._count = sum(1 for raw in handle if raw.strip())
            self._count_key = key
        return self._count, st.st_size

    def _remember_count(self, count: int) -> None:
        st = self.path.stat()
        self._count, self._count_key = count, (st.st_ino, st.st_size, st.st_mtime_ns)

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"


def _describe(args: dict[str, Any]) -> str:
    """A log-safe summary: ids and times only, never excerpts."""
    keys = ("signature_id", "engine", "target", "incident_id", "state", "key")
    return "(" + ", ".join(f"{k}={args[k]}" for k in keys if args.get(k) is not None) + ")"
