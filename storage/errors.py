"""Errors that storage raises for the app to show as plain messages."""

from __future__ import annotations


class StorageError(ValueError):
    """A request that storage refuses (unknown name, duplicate, read-only project...)."""


class NotFoundError(StorageError):
    pass


class UnknownIntentError(StorageError):
    """A label names no intent of the project, where creating one was not asked for."""

    def __init__(self, name: str, hint: str = "") -> None:
        super().__init__(f"Unknown intent {name!r}.{hint}")
        self.name = name


class ConflictError(StorageError):
    """Someone else changed the row since it was read (optimistic locking)."""


class JobEnded(ConflictError):
    """A job's work would count, but the job is no longer running (a user cancelled it, or it
    was reaped or handed back while its worker was silent): ``status`` is what it is now."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


class BusyError(StorageError):
    """The database stayed locked by another writer past the busy timeout; nothing was changed."""


class ReadOnlyProjectError(StorageError):
    """A change to a project imported from a bundle (it can be read and predicted with only)."""


class ReadOnlyError(StorageError, PermissionError):
    """A change attempted where only reading is allowed (a viewer's request); nothing was written."""


class LockedError(StorageError, PermissionError):
    """The user is locked: no sign-in, session or token of theirs counts until an admin unlocks
    them."""


class DatabaseUnavailable(Exception):
    """The database does not answer (PostgreSQL down, restarting or unreachable): nothing was
    read or changed; the same request may succeed in a moment. Not a ``ValueError``: it is no
    fault of the request (REST answers 503, as the health check does)."""

    MESSAGE = "The database is not answering; nothing was changed. Try again in a moment."

    def __init__(self, message: str = MESSAGE) -> None:
        super().__init__(message)


class ArtifactsUnavailable(Exception):
    """The model store (a bucket) does not answer (unreachable, down, timing out): nothing was
    read or changed; the same request may succeed in a moment. Like
    :class:`DatabaseUnavailable`, no fault of the request (REST answers 503 with
    ``Retry-After``)."""

    def __init__(self, where: str, cause: BaseException | None = None) -> None:
        why = f" ({type(cause).__name__})" if cause is not None else ""
        super().__init__(
            f"The model store {where} is not answering{why}; nothing was changed. Try again in "
            "a moment."
        )
        self.where = where
