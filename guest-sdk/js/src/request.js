// What the host hands a plugin for one parent.

/** Everything a plugin needs to decide, for one parent: every field of the contract's
 * request, the objects and the settings parsed from JSON, the time as `nowRfc3339`. */
export class Request {
  constructor({ parent, children = [], related = [], finalizing = false, nowRfc3339 = '1970-01-01T00:00:00Z', config = null, ...fields }) {
    // The contract's other fields, as they were sent.
    Object.assign(this, fields);
    /** The object being reconciled (a `KubeObject`). */
    this.parent = parent;
    /** Children that exist now and are controlled by the parent, all kinds. */
    this.children = children;
    /** Objects selected by the plugin's related queries. */
    this.related = related;
    /** The parent is being deleted and waits on this plugin's finalizer: clean up, then
     * answer with `finalized: true`. */
    this.finalizing = finalizing;
    /** The host's current time as it was sent, RFC 3339. */
    this.nowRfc3339 = nowRfc3339;
    /** The plugin's settings from the operator's configuration (`null` if none). */
    this.config = config;
  }

  /** The host's current time (the same for the whole reconcile; the sandbox has no
   * clock). A hand-made test time that does not parse reads as the Unix epoch. */
  get now() {
    return timeOf(this.nowRfc3339);
  }

  /** Observed children of `kind`. */
  childrenOf(kind) {
    return this.children.filter((o) => kind.matches(o));
  }

  /** The observed child of `kind` named `name`, or `undefined`. */
  child(kind, name) {
    return this.children.find((o) => kind.matches(o) && o.name === name);
  }

  /** Related objects of `kind`. */
  relatedOf(kind) {
    return this.related.filter((o) => kind.matches(o));
  }

  /** The related object of `kind` named `name`; pass `namespace` (`null` for a
   * cluster-scoped kind) when the queries span namespaces and a name is ambiguous. */
  findRelated(kind, name, ...namespace) {
    return this.related.find(
      (o) => kind.matches(o) && o.name === name && (namespace.length === 0 || o.namespace === (namespace[0] ?? undefined)),
    );
  }
}

/** The time `rfc3339` says; one that does not parse reads as the Unix epoch. */
export function timeOf(rfc3339) {
  const d = new Date(rfc3339);
  return Number.isNaN(d.getTime()) ? new Date(0) : d;
}
