"""The validated knowledge base, kept between processes.

Parsing and validating every YAML file took 379 ms of a 0.9 s one-line CLI triage; reading the
validated result back takes about 4 ms. The cache is keyed by the Python version, the knowledge
directory, and the name, size and modification time of each knowledge file and of the modules that
define and load it, so any edit misses it and the files are validated again.

It lives in `TRIAGE_CACHE_DIR`, else the user's cache directory (`~/.cache/triage-bot`). The
variable is read here, not through the settings, because it is consulted before anything else is
loaded. A pickle runs code when read, so only a file in a directory that belongs to this user and
that nobody else can write is read; anything that cannot be read or written is ignored, never an
error: the cache only saves time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
PREFIX = "kb-"


def cache_dir() -> Path:
    if os.environ.get("TRIAGE_CACHE_DIR"):
        return Path(os.environ["TRIAGE_CACHE_DIR"])
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("triage-bot", appauthor=False))


def key(directories: Sequence[Path]) -> str:
    """Changes whenever a knowledge file, the code that reads it or the interpreter changes."""
    digest = hashlib.sha256("\0".join([sys.version, *(str(d.resolve()) for d in directories)]).encode())
    code = sorted(Path(__file__).parent.glob("*.py"))
    for path in [*code, *(path for d in directories for path in sorted(d.glob("*.yaml")))]:
        info = path.stat()
        digest.update(f"\0{path.name}\0{info.st_size}\0{info.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


def _private(path: Path) -> bool:
    """A directory or file of this user's that no one else can write."""
    info = path.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def cached(directories: Sequence[Path], build: Callable[[], T], where: Path | None = None) -> T:
    """The value `build()` returns for these knowledge directories, from the cache when it is current."""
    where = where or cache_dir()
    try:
        file = where / f"{PREFIX}{key(directories)}.pickle"
    except OSError:
        return build()
    try:
        if _private(where) and _private(file):
            with file.open("rb") as handle:
                value: T = pickle.load(handle)  # our own file, in a directory only we can write
                return value
    except FileNotFoundError:
        pass
    except Exception as exc:  # a stale or torn file: build again and replace it
        log.debug("knowledge cache %s unreadable: %s", file, exc)
    value = build()
    _store(where, file, value)
    return value


def _store(where: Path, file: Path, value: object) -> None:
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(where):
            return
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=where)
        with os.fdopen(handle, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, file)  # readers see the old file or the whole new one
        for old in where.glob(f"{PREFIX}*.pickle"):
            if old != file:
                old.unlink(missing_ok=True)
    except Exception as exc:  # read-only home, full disk, a value that does not pickle: no cache
        log.debug("knowledge cache not written in %s: %s", where, exc)
