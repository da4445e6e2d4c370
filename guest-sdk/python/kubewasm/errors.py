"""Why a reconcile produced no decision: raise one of these from ``reconcile``."""

from __future__ import annotations


class Error(Exception):
    """A reconcile that could not decide. ``retryable`` says whether trying again later
    may succeed: the host retries a retryable error with backoff from 5 ms, and a
    permanent one after 5 minutes, or at once when the parent or its inputs change.

    Raise :class:`RetryableError` or :class:`PermanentError`. Any other exception is a
    bug in the plugin: the call traps, as a panic does in Rust, and the host reports the
    traceback from the plugin's stderr.
    """

    retryable: bool = False

    def __init__(self, message: str, retryable: bool | None = None):
        super().__init__(message)
        self.message = message
        if retryable is not None:
            self.retryable = retryable

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, retryable={self.retryable})"


class RetryableError(Error):
    """A transient failure: the host retries with backoff."""

    retryable = True


class PermanentError(Error):
    """The parent (or the config) is wrong; retrying will not help until it changes."""

    retryable = False
