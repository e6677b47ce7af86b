"""The one error tree of Nahida.

NahidaError
 ├── ConfigError            a config file or value is wrong (names the file and key)
 ├── StorageError           SQLite could not be opened, migrated or written
 │    ├── StorageFull               the disk is full: nothing was written (writes go on once
 │    │                             there is room again)
 │    └── DatabaseDamaged           the database file is damaged, truncated or no database
 ├── BackupError            a backup file cannot be written or restored (names the file)
 ├── ProviderError          an LLM call failed (retryable or not)
 │    ├── ProviderAuthError         401/403: key missing or wrong
 │    ├── ProviderRateLimitError    429 after all retries
 │    ├── ProviderTimeoutError      no answer within the timeout
 │    ├── ProviderConnectionError   could not connect
 │    ├── ProviderServerError       5xx after all retries
 │    └── ProviderResponseError     the answer could not be understood
 ├── AdapterError           a platform connection or API call failed
 │    └── ActionFailedError         the platform answered a call with a failure
 ├── CommandError           a chat or CLI command was used wrongly (message is user-facing)
 ├── MemoryError_           a memory read or write was refused or failed
 │    ├── SecretRefused             an explicit write held a secret; nothing was stored
 │    ├── MemoryPermissionError     the actor may not do this to that memory
 │    │    └── PluginPermissionError    a plugin lacks a declared permission (nahida.plugins)
 │    └── UnsafePath                a workspace file's path leaves the workspace; not followed
 └── PluginError            a plugin could not be loaded (nahida.plugins)
"""

from __future__ import annotations


class NahidaError(Exception):
    """Base of every error Nahida raises on purpose."""


class ConfigError(NahidaError):
    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        self.source = source
        self.key = key
        super().__init__(": ".join(p for p in (source, key, message) if p))


class StorageError(NahidaError):
    pass


class StorageFull(StorageError):
    """A write found the disk full; the message names the file and what to do."""


class DatabaseDamaged(StorageError):
    """The database file cannot be read as a database; the message says what to do."""


class BackupError(NahidaError):
    """A backup could not be made or restored; the message names the file and why."""


class CopyError(NahidaError):
    """`nahida store copy` refused (a target holding another memory, a store copied onto
    itself); nothing was written."""


class ProviderError(NahidaError):
    """An LLM call failed. `retryable` says whether trying again may help."""

    retryable = False

    def __init__(self, message: str, *, provider: str = "", status: int | None = None) -> None:
        self.provider = provider
        self.status = status
        super().__init__(message)


class ProviderAuthError(ProviderError):
    pass


class ProviderRateLimitError(ProviderError):
    retryable = True


class ProviderTimeoutError(ProviderError):
    retryable = True


class ProviderConnectionError(ProviderError):
    retryable = True


class ProviderServerError(ProviderError):
    retryable = True


class ProviderResponseError(ProviderError):
    pass


class AdapterError(NahidaError):
    pass


class ActionFailedError(AdapterError):
    """A platform API call answered with a failure; keeps the platform's own codes."""

    def __init__(
        self, action: str, *, retcode: int | None = None, msg: str = "", wording: str = ""
    ) -> None:
        self.action = action
        self.retcode = retcode
        self.msg = msg
        self.wording = wording
        super().__init__(f"{action} failed: retcode={retcode} {msg or ''} {wording or ''}".strip())


class CommandError(NahidaError):
    """A command was used wrongly; the message is shown to the user as is."""


class MemoryError_(NahidaError):  # named so it does not shadow the builtin MemoryError
    pass


class SecretRefused(MemoryError_, ValueError):
    """An explicit write contained a secret; nothing was stored."""


class MemoryPermissionError(MemoryError_, PermissionError):
    """The actor may not change or review that memory."""


class UnsafePath(MemoryError_, OSError):
    """A workspace file's path would lead out of the workspace (a name from outside input, a
    symlink to elsewhere); nothing was read or written there. An OSError, so a writer that
    already survives a failing disk survives this the same way."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path  # relative to the workspace
        self.reason = reason
        super().__init__(f"{path}: {reason}")
