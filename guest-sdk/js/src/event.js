// What an event handler receives: one change of one watched object.

import { timeOf } from './request.js';

/** What happened to a watched object. */
export const Change = Object.freeze({
  /** The object appeared: created, or first seen. */
  Added: 'added',
  /** The object changed (a new resourceVersion). */
  Updated: 'updated',
  /** The object is gone. */
  Deleted: 'deleted',
});

/**
 * One change of one watched object, as `handle` receives it: every field of the
 * contract's record, the objects (`KubeObject`s) and the settings parsed from JSON, the
 * time as `nowRfc3339`.
 *
 * Changes of one object arrive in order, one at a time: the next is delivered once the
 * handler has returned from this one. Throw a `RetryableError` to have this one delivered
 * again with backoff (the object's later changes wait behind it), or a `PermanentError`
 * to drop it.
 */
export class ObjectEvent {
  constructor({ change, kind, object, oldObject, initial = false, finalStateUnknown = false, deliveryId = '', attempt = 1, nowRfc3339 = '1970-01-01T00:00:00Z', config = null, ...fields }) {
    // The contract's other fields, as they were sent.
    Object.assign(this, fields);
    /** `Change.Added`, `Change.Updated` or `Change.Deleted`. */
    this.change = change;
    /** The object's kind (a `KindRef`), as the manifest's watch names it. */
    this.kind = kind;
    /** The object now (added, updated) or as last known (deleted). */
    this.object = object;
    /** Updated: the object before the change (after a host restart only its metadata);
     * `undefined` otherwise. */
    this.oldObject = oldObject ?? undefined;
    /** The object existed before the plugin was first loaded (delivered only when its
     * settings ask for initial objects). */
    this.initial = initial;
    /** Deleted: noticed by a relist or a restart, not the watch; `object` may be stale. */
    this.finalStateUnknown = finalStateUnknown;
    /** `<uid>:<resourceVersion>:<change>`: the same on every retry and after restarts,
     * so that a receiver can drop duplicates. */
    this.deliveryId = deliveryId;
    /** 1 on the first delivery, counting up on retries. */
    this.attempt = attempt;
    /** The host's current time as it was sent, RFC 3339. */
    this.nowRfc3339 = nowRfc3339;
    /** The plugin's settings (`null` if none), Secret references resolved. */
    this.config = config;
  }

  /** The host's current time (the sandbox has no clock); a hand-made test time that
   * does not parse reads as the Unix epoch. */
  get now() {
    return timeOf(this.nowRfc3339);
  }
}

/** The delivery id the host gives `change` of `object`: its uid, resourceVersion and the
 * change. */
export function deliveryIdOf(object, change) {
  const meta = object?.metadata ?? {};
  return `${meta.uid ?? ''}:${meta.resourceVersion ?? ''}:${change}`;
}
