/// <reference path="./kubewasm-reconciler-types.d.ts" />
declare module 'kubewasm:reconciler/handler@0.2.0' {
  /**
   * Handle one change of one watched object, in a fresh instance. An error with
   * `retryable` (or a trap, or the deadline) delivers the same event again with
   * backoff, and the object's later changes wait behind it; an error without
   * `retryable` drops the event (a Warning is logged and counted) and moves on.
   */
  export function handle(event: ObjectEvent): void;
  export type ObjectEvent = import('kubewasm:reconciler/types@0.2.0').ObjectEvent;
  export type ReconcileError = import('kubewasm:reconciler/types@0.2.0').ReconcileError;
}
