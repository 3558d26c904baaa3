"""Files the bot writes on the local disk are readable by its own user only (0600).

The history's SQLite database, the spool and its rejects, and the scheduler's lock and claims
files can hold pastes, user ids and incident text: nobody else on the host needs to read them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

PRIVATE = 0o600


def touch_private(path: Path | str) -> None:
    """Create `path` empty with mode 0600 if it is missing (its directory must exist)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE)
    os.close(fd)


def append_private(path: Path | str) -> IO[str]:
    """Open `path` for appending text, creating it with mode 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
    return os.fdopen(fd, "a", encoding="utf-8")
