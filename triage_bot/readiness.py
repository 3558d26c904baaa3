"""Readiness, apart from liveness: what this replica's parts say about themselves right now.

`/healthz` (liveness) answers from memory only: the process is up. `/readyz` runs each check
with a deadline, in parallel, so a hung database cannot hang the probe, and reports every part:

- `database`: a `SELECT 1` on the history's database. Down is *degraded*, not unready: records
  wait in the spool and replies still go out, and with one shared database an outage would
  otherwise take every replica out of the load balancer at once.
- `scheduler`: leader, standby, or not running (unready: no health checks or digest here).
- `slack`: whether the last Web API call landed (unready after Slack refused our token).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

CHECK_DEADLINE_S = 2.0


@dataclass(frozen=True)
class Status:
    ok: bool
    detail: str
    required: bool = True  # False: a failure only degrades the replica


Check = Callable[[], Status]


@dataclass
class Readiness:
    checks: dict[str, Check] = field(default_factory=dict)
    deadline_s: float = CHECK_DEADLINE_S
    _pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(4, thread_name_prefix="readyz")
    )

    def add(self, name: str, check: Check) -> None:
        self.checks[name] = check

    def report(self) -> tuple[bool, dict[str, object]]:
        """(ready, a JSON-able report of every check)."""
        futures = {name: self._pool.submit(check) for name, check in self.checks.items()}
        parts: dict[str, object] = {}
        ready, degraded = True, False
        for name, future in futures.items():
            try:
                status = future.result(timeout=self.deadline_s)
            except FutureTimeout:
                status = Status(False, f"no answer within {self.deadline_s:g} s", required=name != "database")
            except Exception as exc:  # a check that breaks says so; its text stays generic
                status = Status(False, f"check failed ({type(exc).__name__})")
            parts[name] = {"ok": status.ok, "detail": status.detail}
            if not status.ok:
                ready, degraded = ready and not status.required, True
        return ready, {"ready": ready, "degraded": degraded, "checks": parts}


def database_check(history: object) -> Check:
    """The history's database answers a trivial query (degraded, not unready, when it does not)."""
    from sqlalchemy import text

    def check() -> Status:
        try:
            with history.session_factory() as session:  # type: ignore[attr-defined]
                session.execute(text("SELECT 1"))
            return Status(True, "reachable", required=False)
        except Exception:
            return Status(False, "unreachable: records wait in the spool", required=False)

    return check


def scheduler_check(scheduler: object | None) -> Check:
    def check() -> Status:
        if scheduler is None:
            return Status(False, "not running")
        leader = scheduler.coordinator.is_leader(verify=False)  # type: ignore[attr-defined]
        return Status(True, "leader" if leader else "standby")

    return check
