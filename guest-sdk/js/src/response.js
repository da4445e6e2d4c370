// What a plugin answers: the desired children, status, parent metadata, events.

import { isPlainObject } from './kinds.js';

/** The annotation the host stamps on each child it applies. */
export const APPLIED_HASH = 'kubewasm.io/applied-hash';

// What the API server and the host set on an object, and a kept child does without.
const SERVER_METADATA = [
  'resourceVersion',
  'managedFields',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'generation',
  'selfLink',
  'ownerReferences',
];

export const EventType = Object.freeze({ Normal: 'Normal', Warning: 'Warning' });

/** A Kubernetes Event the host records on the parent. */
export class Event {
  constructor(type, reason, message) {
    this.type = type;
    /** UpperCamelCase machine-readable cause, e.g. `DeploymentExists`. */
    this.reason = reason;
    this.message = message;
  }

  static normal(reason, message) {
    return new Event(EventType.Normal, reason, message);
  }

  static warning(reason, message) {
    return new Event(EventType.Warning, reason, message);
  }
}

/**
 * The plugin's decision for one parent.
 *
 * `children` is the FULL desired set: an observed child the parent controls that is
 * missing from it is deleted by the host. Likewise labels and annotations set by an
 * earlier response and missing from this one are removed from the parent. Pass the fields
 * to the constructor, or add with the methods, which return the response so that they
 * chain: `new Response({ status }).child(deployment).event(Event.normal(...))`.
 */
export class Response {
  constructor({
    children = [],
    status = undefined,
    labels = {},
    annotations = {},
    requeueAfterMs = undefined,
    events = [],
    finalized = false,
    delete: uids = [],
  } = {}) {
    this.children = [...children];
    /** The desired `.status` of the parent; `undefined` leaves it alone. */
    this.status = status;
    this.labels = { ...labels };
    this.annotations = { ...annotations };
    /** Reconcile again after this many milliseconds, even if nothing changes. */
    this.requeueAfterMs = requeueAfterMs;
    this.events = [...events];
    /** When finalizing: cleanup is done, let the parent go. */
    this.finalized = finalized;
    /** The `metadata.uid`s of observed children to delete, of any kind. */
    this.delete = [...uids];
  }

  /** Adds a desired child: an object with `apiVersion`, `kind` and `metadata.name`
   * (`parent.childMeta(name)` gives the metadata). */
  child(obj) {
    this.children.push({ ...obj });
    return this;
  }

  /** Keeps an observed child as it is: the host neither prunes nor writes it, so what
   * others changed in it stays. The child is returned with its `metadata.uid`, which
   * marks it as kept, and without what the API server and the host set. */
  keep(observed) {
    const child = JSON.parse(JSON.stringify(observed));
    if (isPlainObject(child.metadata)) {
      for (const name of SERVER_METADATA) delete child.metadata[name];
      const annotations = child.metadata.annotations;
      if (isPlainObject(annotations)) {
        delete annotations[APPLIED_HASH];
        if (Object.keys(annotations).length === 0) delete child.metadata.annotations;
      }
    }
    delete child.status;
    this.children.push(child);
    return this;
  }

  /** Deletes an observed child, whatever its kind: how a plugin whose manifest keeps a
   * kind unlisted still deletes the children it means to (a CronJob's finished Jobs beyond
   * its history limit). The child goes by its `metadata.uid`; one also returned or kept is
   * refused. */
  deleteChild(observed) {
    this.delete.push(String(observed?.metadata?.uid ?? ''));
    return this;
  }

  label(key, value) {
    this.labels[key] = value;
    return this;
  }

  annotation(key, value) {
    this.annotations[key] = value;
    return this;
  }

  event(event) {
    this.events.push(event);
    return this;
  }
}
