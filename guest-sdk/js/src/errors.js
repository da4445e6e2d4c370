// Why a reconcile produced no decision: throw one of these from `reconcile`.

/**
 * A reconcile that could not decide. `retryable` says whether trying again later may
 * succeed: the host retries a retryable error with backoff from 5 ms, and a permanent one
 * after 5 minutes, or at once when the parent or its inputs change.
 *
 * Throw a `RetryableError` or a `PermanentError`. Any other exception is a bug in the
 * plugin: the call traps, and the host reports the exception and its stack.
 */
export class ReconcileError extends Error {
  constructor(message, retryable = false) {
    super(message);
    this.name = new.target.name;
    this.retryable = retryable;
  }
}

/** A transient failure: the host retries with backoff. */
export class RetryableError extends ReconcileError {
  constructor(message) {
    super(message, true);
  }
}

/** The parent (or the config) is wrong; retrying will not help until it changes. */
export class PermanentError extends ReconcileError {
  constructor(message) {
    super(message, false);
  }
}
