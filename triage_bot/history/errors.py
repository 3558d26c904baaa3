"""Errors the history raises to its callers; bad arguments are plain `ValueError`s."""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc as sa_exc


class StorageError(Exception):
    """Base class of the history's own errors."""


class StorageUnavailable(StorageError):
    """The database cannot be reached and the operation cannot wait in the spool (e.g. a query)."""


class SpoolFullError(StorageUnavailable):
    """The database is down and the spool is at its bound: this write was refused, loudly."""


class IncidentNotFound(StorageError, LookupError):
    """No incident has this id."""


_SQLITE_TRANSIENT = ("locked", "busy", "unable to open", "disk i/o", "readonly")


def is_unavailable(error: BaseException) -> bool:
    """True when the database is away or busy (spool and retry), False for a real error (raise)."""
    if isinstance(error, StorageUnavailable | sa_exc.TimeoutError | sa_exc.DisconnectionError):
        return True
    if isinstance(error, sa_exc.DBAPIError):
        if error.connection_invalidated:
            return True
        orig = error.orig
        if isinstance(orig, sqlite3.OperationalError):
            return any(word in str(orig).lower() for word in _SQLITE_TRANSIENT)
        return isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError)
    return isinstance(error, ConnectionError | TimeoutError)
