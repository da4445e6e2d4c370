// The plugin's self-description: parent, owned children, related kinds, CRDs, limits,
// the kinds whose changes it handles and the URLs it needs.

import { debug, isDnsLabel } from './names.js';
import { KindRef } from './kinds.js';

const U32 = 2 ** 32 - 1;

/** A manifest the host would refuse to load; the message names the field. */
export class ManifestError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ManifestError';
  }
}

/** A kind whose changes the plugin's `handle` receives, object by object: every object
 * of `kind`, or those the selectors (Kubernetes' text form: `app=web,tier notin (db)`,
 * `metadata.name=web`) select. */
export class Watch {
  constructor(kind, { labelSelector, fieldSelector } = {}) {
    this.kind = kind;
    this.labelSelector = labelSelector ?? undefined;
    this.fieldSelector = fieldSelector ?? undefined;
    Object.freeze(this);
  }
}

/**
 * What a plugin reconciles, owns, reads, handles and reaches: returned by `describe`.
 *
 * A reconciler names its `parent`; an event handler its `watches` (each change of an
 * object they select goes to `handle`); a plugin may be both, and `Manifest.handler`
 * makes one that only handles events. `children` is an allow-list: an answer holding any
 * other kind is refused and nothing is written. `outbound` lists the URLs the plugin
 * needs to reach (Spin's `allowed_outbound_hosts` syntax: `https://hooks.slack.com`,
 * `http://*.svc.cluster.local:8080`); the operator grants them, or fewer. `crds` holds
 * CustomResourceDefinitions as YAML or JSON text (`import crd from './crd.yaml'`: the
 * build puts the file's text in the component, which has no files). `limits` (`{
 * deadlineMs, memoryMib }`) are defaults the operator may lower.
 */
export class Manifest {
  constructor(name, parent, { children = [], related = [], finalizer = false, crds = [], limits = {}, watches = [], outbound = [] } = {}) {
    this.name = name;
    /** The kind it reconciles; `undefined` for a plugin that only handles events. */
    this.parent = parent ?? undefined;
    this.children = [...children];
    this.related = [...related];
    this.finalizer = finalizer;
    this.crds = [...crds];
    this.limits = { deadlineMs: limits.deadlineMs, memoryMib: limits.memoryMib };
    this.watches = [...watches];
    this.outbound = [...outbound];
  }

  /** A plugin named `name` that reconciles nothing: it handles the changes of the kinds
   * it `watches`. */
  static handler(name, options = {}) {
    return new Manifest(name, undefined, options);
  }

  get fieldManager() {
    return `kubewasm.${this.name}`;
  }

  get finalizerName() {
    return `kubewasm.io/${this.name}`;
  }

  /** What the host checks at load (but parsing the CRDs). Throws a `ManifestError`
   * naming the field. */
  check() {
    this.checkTypes();
    if (!isDnsLabel(this.name)) {
      throw new ManifestError(
        `name ${debug(this.name)} must be a DNS label (lower-case letters, digits and '-', at most 63)`,
      );
    }
    if (this.parent === undefined) {
      if (this.watches.length === 0) throw new ManifestError('a plugin needs a parent to reconcile or watches to handle, or both');
      if (this.children.length > 0 || this.related.length > 0 || this.finalizer) {
        throw new ManifestError('children, related and finalizer belong to a reconciler: they need a parent');
      }
    }
    const kinds = [
      ...(this.parent === undefined ? [] : [['parent', this.parent]]),
      ...this.children.map((k) => ['children', k]),
      ...this.related.map((k) => ['related', k]),
      ...this.watches.map((w) => ['watches', w.kind]),
    ];
    for (const [where, k] of kinds) {
      if (!k.version || !k.kind || !k.plural) throw new ManifestError(`${where}: ${k} needs a version, a kind and a plural`);
    }
    const blank = this.outbound.find((p) => p.trim() === '');
    if (blank !== undefined) throw new ManifestError(`outbound: ${debug(blank)} is empty; give scheme://host[:port]`);
    if (this.limits.deadlineMs === 0 || this.limits.memoryMib === 0) {
      throw new ManifestError('limits: a deadline or memory limit of 0 leaves nothing to run');
    }
  }

  /** What the WIT record needs of each field, checked so that a mistake is named here
   * rather than trapping at the boundary. */
  checkTypes() {
    if (typeof this.name !== 'string') throw new ManifestError(`name: expected a string, found ${show(this.name)}`);
    if (this.parent !== undefined && !(this.parent instanceof KindRef)) {
      throw new ManifestError(`parent: expected a KindRef or undefined, found ${show(this.parent)}`);
    }
    for (const where of ['children', 'related']) {
      this[where].forEach((k, i) => {
        if (!(k instanceof KindRef)) throw new ManifestError(`${where}[${i}]: expected a KindRef, found ${show(k)}`);
      });
    }
    this.watches.forEach((w, i) => {
      if (!(w instanceof Watch) || !(w.kind instanceof KindRef)) throw new ManifestError(`watches[${i}]: expected a Watch of a KindRef, found ${show(w)}`);
      for (const selector of ['labelSelector', 'fieldSelector']) {
        if (w[selector] !== undefined && typeof w[selector] !== 'string') {
          throw new ManifestError(`watches[${i}].${selector}: expected a string, found ${show(w[selector])}`);
        }
      }
    });
    this.outbound.forEach((pattern, i) => {
      if (typeof pattern !== 'string') throw new ManifestError(`outbound[${i}]: expected a URL pattern (a string), found ${show(pattern)}`);
    });
    this.crds.forEach((crd, i) => {
      if (typeof crd !== 'string') throw new ManifestError(`crds[${i}]: expected YAML or JSON text, found ${typeof crd}`);
    });
    for (const limit of ['deadlineMs', 'memoryMib']) {
      const value = this.limits[limit];
      if (value !== undefined && value !== null && !(Number.isInteger(value) && value >= 0 && value <= U32)) {
        throw new ManifestError(`limits.${limit}: expected a whole number from 0 to ${U32}, found ${show(value)}`);
      }
    }
  }
}

function show(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
