"""A PostgreSQL server of the test's own: started in a temporary directory, stopped mid-run, started again.

initdb/postgres refuse to run as root, so as root they run as the `postgres` OS user. The server
lives in a temporary directory on a free port and is removed afterwards; the fixture skips (with
the reason) where PostgreSQL's binaries or the postgres user are missing.
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
from pathlib import Path

import pytest


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
