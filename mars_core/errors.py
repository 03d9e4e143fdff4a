"""The one exception tree of mars-memory.

Every error the library raises on purpose derives from :class:`MarsError`, so a caller
can catch everything of ours with one clause and nothing of anyone else's. Errors from
third-party clients are wrapped at the edge (``raise MarsBackendError(...) from exc``)
and their messages say what to do next.

Examples:
    >>> from mars_core.errors import MarsError, ValidationError
    >>> issubclass(ValidationError, MarsError) and issubclass(ValidationError, ValueError)
    True
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError as PydanticValidationError

__all__ = [
    "BlockedByPreferenceError",
    "BudgetExceededError",
    "ConcurrentWriteError",
    "ConfigError",
    "ConflictError",
    "CorruptStoreError",
    "DestinationNotEmptyError",
    "EmbeddingMismatchError",
    "ErasedMemoryError",
    "ExtraNotInstalledError",
    "ImportFormatError",
    "MarsBackendError",
    "MarsError",
    "NotFoundError",
    "PolicyError",
    "PrivacyHookError",
    "StorageUnavailableError",
    "StoreClosedError",
    "SyncInAsyncError",
    "ValidationError",
]


class MarsError(Exception):
    """Base class of every error raised by mars-memory."""


class ValidationError(MarsError, ValueError):
    """An argument or a record is invalid; nothing was changed."""

    @classmethod
    def from_pydantic(cls, exc: PydanticValidationError, what: str) -> ValidationError:
        """Ours from pydantic's, without echoing input values (they may be sensitive).

        Examples:
            >>> import pydantic
            >>> class M(pydantic.BaseModel):
            ...     k: int
            >>> try:
            ...     M(k="secret")
            ... except pydantic.ValidationError as exc:
            ...     "secret" in str(ValidationError.from_pydantic(exc, "thing"))
            False
        """
        parts = [f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                 for e in exc.errors(include_input=False, include_url=False)]
        return cls(f"invalid {what}: " + "; ".join(parts))


class ConfigError(ValidationError):
    """A configuration object or option is invalid or unknown."""


class NotFoundError(MarsError, KeyError):
    """No memory (or namespace, or record) with that identifier exists."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want a sentence.
        return str(self.args[0]) if self.args else "not found"


class BlockedByPreferenceError(MarsError):
    """The user's privacy preferences forbid storing this memory; nothing was stored."""


class ConflictError(MarsError):
    """The operation conflicts with existing state (duplicate id, a writer lock held
    past the wait allowed); nothing was written."""


class ConcurrentWriteError(ConflictError):
    """Another process changed a namespace this call had read (or the database broke a
    deadlock between two writers); nothing was written, and the call can be repeated as
    it is. ``MemoryStore`` repeats such a call itself a few times before raising this."""


class DestinationNotEmptyError(ConflictError):
    """A copy's destination already holds a store (or rows of one); nothing was
    written (:func:`mars_core.io.transfer.copy_store`)."""


class ErasedMemoryError(ConflictError):
    """An import holds memories erased from this store (the same id, or the same text in
    the same namespace): restoring a backup must not undo a right-to-be-forgotten
    request; nothing was imported."""


class BudgetExceededError(ValidationError):
    """A single memory is heavier than the whole budget of its namespace; nothing was stored."""


class EmbeddingMismatchError(ConfigError):
    """The embedder's name or dimension differs from the one the store was built with."""


class ImportFormatError(ValidationError):
    """An import document (JSON-LD, snapshot) is malformed; nothing was imported."""


class PolicyError(MarsError):
    """A forgetting policy could not restore its invariants."""


class PrivacyHookError(MarsError):
    """The ``rephrase_or_confirm`` hook raised or answered with something it may not;
    nothing was shown and nothing was recorded (the hook's own error is the cause)."""


class MarsBackendError(MarsError):
    """A vector backend failed; the original error is chained as ``__cause__``."""


class CorruptStoreError(MarsBackendError):
    """Persisted state on disk is unreadable in a way recovery cannot repair."""


class StorageUnavailableError(MarsBackendError):
    """The record store's server cannot be reached (down, refused, wrong address or
    credentials, connection lost). A call that raised it before committing changed
    nothing and can be repeated once the server is back; the message says when a lost
    connection leaves a commit's outcome unknown."""


class StoreClosedError(MarsError):
    """The store was closed; open it again with ``MemoryStore.open(path)``."""


class SyncInAsyncError(MarsError, asyncio.InvalidStateError, RuntimeError):
    """A synchronous store call was made on a thread that runs an event loop.

    It would block the loop for the whole call; the message names the async twin to
    await instead (``await store.aadd(...)`` for ``store.add(...)``). It is also
    :class:`asyncio.InvalidStateError`, what LangGraph's stores raise for the same
    mistake, and a :class:`RuntimeError`. Opt out with
    ``MemoryStore(..., allow_sync_in_loop=True)``.
    """


class ExtraNotInstalledError(MarsError, ImportError):
    """An optional integration was used without its extra installed.

    Args:
        extra: the name of the extra to install.
        module: the module that failed to import.
    """

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(
            f"{module!r} is not installed; install it with: pip install 'mars-memory[{extra}]'"
        )
        self.extra = extra
        self.module = module
