"""Writes that are never lost quietly: each runs in one transaction, retried once for a passing
error, and waits in the spool, in order, while the database is away."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from triage_bot.history.errors import StorageUnavailable, is_unavailable
from triage_bot.history.spool import DrainResult, Spool

log = logging.getLogger(__name__)
T = TypeVar("T")


class SpooledWrites:
    """One transaction per write, or the spool; subclasses name their operations in `_ops`."""

    _ops: dict[str, Callable[[Session, dict[str, Any]], Any]]

    def __init__(
        self, session_factory: sessionmaker[Session], spool: Spool | None, retry_after: float
    ) -> None:
        self.session_factory = session_factory
        self.spool = spool
        self.retry_after = retry_after
        self._down_until = 0.0

    def flush_spool(self) -> DrainResult | None:
        """Replay spooled writes in order (also done before each write); None without a spool."""
        if self.spool is None:
            return None
        result = self.spool.drain(lambda op, args: self._run(self._ops[op], args), is_unavailable)
        if result.stopped:
            self._down_until = time.monotonic() + self.retry_after
        return result

    def _maybe_flush(self) -> None:
        if self.spool is not None and not self.spool.is_empty() and time.monotonic() >= self._down_until:
            self.flush_spool()

    def _write(
        self,
        op: str,
        args: dict[str, Any],
        spooled: T,
        apply: Callable[[Session, dict[str, Any]], T] | None = None,
    ) -> T:
        """Run `op` in one transaction, or spool it when the database is away. `apply` does the op
        and more in the same transaction; a spooled write replays as the plain op."""
        if self.spool is not None:
            self._maybe_flush()
            if not self.spool.is_empty() or time.monotonic() < self._down_until:
                self.spool.append(op, args)  # keep order behind what is already waiting
                return spooled
        try:
            done: T = self._run(
                apply or self._ops[op], args
            )  # each op returns what its public method promises
            return done
        except StorageUnavailable:
            if self.spool is None:
                raise
            self._down_until = time.monotonic() + self.retry_after
            self.spool.append(op, args)
            return spooled

    def _run(self, apply: Callable[[Session, dict[str, Any]], T], args: dict[str, Any]) -> T:
        """One transaction, retried once for a transient error (deadlock, dropped connection)."""
        for attempt in (1, 2):
            try:
                with self.session_factory() as session, session.begin():
                    return apply(session, args)
            except Exception as error:
                if not is_unavailable(error):
                    raise
                if attempt == 2:
                    raise StorageUnavailable(f"database unavailable: {_first_line(error)}") from error
                time.sleep(0.05)
        raise AssertionError("unreachable")


def _first_line(error: BaseException) -> str:
    return (str(getattr(error, "orig", None) or error).strip().splitlines() or [type(error).__name__])[0][
        :200
    ]
