"""A real PostgreSQL outage: the test runs its own server, stops it mid-run and starts it again.

initdb/postgres refuse to run as root, so as root they run as the `postgres` OS user. The server
lives in a temporary directory on a free port and is removed afterwards; it skips (with the
reason) where PostgreSQL's binaries or the postgres user are missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.history import HistoryStore, Observation, Spool, StorageUnavailable
from bot.history.db import make_engine
from bot.history.models import Base, EngineCheck, Occurrence


def _bin_dir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    return Path(dirs[-1]) if dirs else None


class OwnPostgres:
    def __init__(self, bindir: Path, base: Path, user: str | None) -> None:
        self.bindir, self.base, self.user = bindir, base, user
        self.data = base / "data"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.base / "log"), "-w", "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    bindir = _bin_dir()
    if bindir is None or not (bindir / "pg_ctl").exists():
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found")
    user = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user for initdb")
        user = "postgres"
    base = Path(tempfile.mkdtemp(prefix="triage-pg-"))
    if user:
        os.chown(base, owner.pw_uid, owner.pw_gid)
    server = OwnPostgres(bindir, base, user)
    try:
        server.init()
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):  # already stopped
            server.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


def test_records_survive_a_postgres_restart_in_order(own_postgres: OwnPostgres, tmp_path: Path) -> None:
    engine = make_engine(own_postgres.url)
    Base.metadata.create_all(engine)
    spool_path = tmp_path / "spool.jsonl"
    store = HistoryStore.from_url(own_postgres.url, spool=Spool(spool_path), retry_after=0)
    sig, now = "vllm.kv_cache_no_memory", datetime.now(UTC)

    made = [Observation(sig, "vllm", "llama-prod", excerpt=f"before {i}", seen_at=now) for i in range(3)]
    assert not any(store.record(o).spooled for o in made)

    own_postgres.stop("immediate")  # as abrupt as a crash; pooled connections die with it
    during = [Observation(sig, "vllm", "llama-prod", excerpt=f"during {i}", seen_at=now) for i in range(10)]
    assert all(store.record(o).spooled for o in during[:5])
    assert store.record_check("llama-prod", "down", checked_at=now) is None
    with pytest.raises(StorageUnavailable):
        store.history()
    # The bot restarts while the database is still down: the new process appends behind the old spool.
    restarted = HistoryStore.from_url(own_postgres.url, spool=Spool(spool_path), retry_after=0)
    assert all(restarted.record(o).spooled for o in during[5:])
    assert len(Spool(spool_path)) == 11

    own_postgres.start()
    last = Observation(sig, "vllm", "llama-prod", excerpt="after", seen_at=now)
    result = store.record(last)  # the first store recovers by itself: pre-ping replaces dead connections
    assert not result.spooled and Spool(spool_path).is_empty()
    assert result.occurrence_count == 14 and not result.is_new  # dedup held across the outage

    with engine.connect() as connection:
        stored = connection.execute(select(Occurrence.key).order_by(Occurrence.id)).scalars().all()
        checks = connection.execute(select(func.count()).select_from(EngineCheck)).scalar_one()
    assert stored == [o.key for o in [*made, *during, last]]  # nothing lost, nothing doubled, in order
    assert checks == 1
    assert not (tmp_path / "spool.jsonl.rejected").exists()
    engine.dispose()
