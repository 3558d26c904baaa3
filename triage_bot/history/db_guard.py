"""Client-side deadlines for PostgreSQL: a server that hangs costs one deadline, not every call.

libpq's `connect_timeout` bounds connecting, and `statement_timeout` is the server's own; neither
helps when the server (or a proxy in front of it) accepts the connection and then never answers:
the client waits in `recv()` for ever. Here a watchdog thread shuts the socket of any statement
that runs past its deadline (the blocked read returns, psycopg raises, SQLAlchemy drops the
connection, and the history spools), and for a short while after such a failure every checkout
fails at once: the replies and records that follow do not each wait for the same hung server.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import socket
import threading
import time
from typing import Any

from sqlalchemy import Engine, event, exc

log = logging.getLogger(__name__)

STATEMENT_DEADLINE_S = 10.0
WAITED_S = 1.0  # a connect that fails after this long waited for a timeout (a refusal is instant)
DOWN_FOR_S = 10.0


class DatabaseDown(ConnectionError):
    """The database failed a moment ago: fail fast instead of waiting for it again. (Not a
    DisconnectionError: the pool would retry the checkout and then report a closed connection.)"""


class _Watchdog:
    """One thread for every statement deadline of the process."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Any]] = []
        self._cancelled: set[int] = set()
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, kill: Any) -> int:
        with self._cond:
            token = next(self._ids)
            heapq.heappush(self._heap, (time.monotonic() + seconds, token, kill))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="db-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()
            return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._cancelled.add(token)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                due, token, kill = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                if token in self._cancelled:
                    self._cancelled.discard(token)
                    continue
            with contextlib.suppress(Exception):  # the connection is already gone: nothing to stop
                kill()


_WATCHDOG = _Watchdog()


def _socket_of(raw: Any) -> int | None:
    try:
        return int(raw.pgconn.socket)
    except Exception:  # closed: libpq has no socket any more
        return None


def connection_killer(raw: Any, on_kill: Any) -> Any:
    """What the watchdog runs when a statement on `raw` (a psycopg connection) passes its deadline:
    shut its socket so the blocked read returns. The descriptor number is taken now; if the
    connection is closed by the time this runs, the number may belong to another socket (a web
    server's, say), so nothing is touched."""
    fileno = _socket_of(raw)

    def kill() -> None:
        if fileno is None or getattr(raw, "closed", True) or _socket_of(raw) != fileno:
            return
        on_kill()
        sock = socket.socket(fileno=fileno)
        try:
            sock.shutdown(socket.SHUT_RDWR)  # the blocked recv() returns; psycopg raises
        finally:
            sock.detach()  # the fd still belongs to libpq

    return kill


def guard(engine: Engine, deadline_s: float = STATEMENT_DEADLINE_S, down_for_s: float = DOWN_FOR_S) -> None:
    """Give every statement on `engine` a client-side deadline, and fail fast for a while after a hang."""
    state = {"down_until": 0.0}

    @event.listens_for(engine, "before_cursor_execute")
    def _arm(conn: Any, cursor: Any, *_args: Any) -> None:
        stale = conn.info.pop("triage_watchdog", None)
        if stale is not None:  # a statement whose end was never seen must not fire later
            _WATCHDOG.disarm(stale)
        conn.info["triage_watchdog"] = _WATCHDOG.arm(deadline_s, killer(conn.connection.dbapi_connection))

    @event.listens_for(engine, "after_cursor_execute")
    def _disarm(conn: Any, *_args: Any) -> None:
        token = conn.info.pop("triage_watchdog", None)
        if token is not None:
            _WATCHDOG.disarm(token)

    @event.listens_for(engine, "handle_error")
    def _failed(context: Any) -> None:
        token = (
            context.connection.info.pop("triage_watchdog", None) if context.connection is not None else None
        )
        if token is not None:
            _WATCHDOG.disarm(token)
        # a refused connection fails fast by itself; waiting (a connect timeout) is what to avoid repeating
        if context.is_disconnect and "timeout" in str(context.original_exception).lower():
            state["down_until"] = max(state["down_until"], time.monotonic() + down_for_s)

    def killer(raw: Any) -> Any:
        def mark_down() -> None:
            log.error("database: no answer within %.0f s; dropping the connection", deadline_s)
            state["down_until"] = time.monotonic() + down_for_s

        return connection_killer(raw, mark_down)

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        """Fail fast while the database is marked down; mark it down when connecting had to wait
        for its timeout (a server that accepts and never answers)."""
        if time.monotonic() < state["down_until"]:
            raise DatabaseDown("the database failed a moment ago; not waiting for it again yet")
        started = time.monotonic()
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception:
            if time.monotonic() - started >= WAITED_S:
                state["down_until"] = time.monotonic() + down_for_s
            raise

    @event.listens_for(engine, "checkout")
    def _ping(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        """Pre-ping with a deadline (SQLAlchemy's own pre-ping has none): a pooled connection to a
        server that restarted is replaced, and one to a server that hangs is dropped in time."""
        if time.monotonic() < state["down_until"]:
            raise DatabaseDown("the database failed a moment ago; not waiting for it again yet")
        token = _WATCHDOG.arm(deadline_s, killer(dbapi_connection))
        try:
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            # the ping opened a transaction: end it, or the connection is handed out "idle in
            # transaction" and cannot even be switched to autocommit (psycopg refuses)
            dbapi_connection.rollback()
        except Exception as error:
            if time.monotonic() < state["down_until"]:
                raise DatabaseDown("the database hung; not waiting for it again yet") from error
            raise exc.DisconnectionError(
                f"pre-ping failed: {type(error).__name__}"
            ) from error  # reconnect once
        finally:
            _WATCHDOG.disarm(token)
