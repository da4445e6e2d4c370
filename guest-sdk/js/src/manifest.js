// The plugin's self-description: parent, owned children, related kinds, CRDs, limits,
// the kinds whose changes it handles and the URLs it needs.

import { AdmissionRule, Operation } from './admission.js';
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
  constructor(
    name,
    parent,
    { children = [], related = [], finalizer = false, crds = [], limits = {}, watches = [], outbound = [], keepUnlisted = [], defaults = [], validates = [], converts = false } = {},
  ) {
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
    /** Child kinds whose observed children an answer may leave out: those it omits are
     * kept, not deleted (a CronJob's running Jobs). Each must be among `children`. */
    this.keepUnlisted = [...keepUnlisted];
    /** The writes (`AdmissionRule`s) `default` may change before they are stored. */
    this.defaults = [...defaults];
    /** The writes `validate` may refuse. */
    this.validates = [...validates];
    /** Whether `convert` converts the parent between the versions its CRD serves. */
    this.converts = converts;
  }

  /** A plugin named `name` that reconciles nothing: it handles the changes of the kinds
   * it `watches`, or admits the writes it `defaults` and `validates` (a policy). */
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
      if (this.watches.length === 0 && this.defaults.length === 0 && this.validates.length === 0) {
        throw new ManifestError('a plugin needs a parent to reconcile, watches to handle or writes to admit (defaults, validates)');
      }
      if (this.children.length > 0 || this.related.length > 0 || this.finalizer) {
        throw new ManifestError('children, related and finalizer belong to a reconciler: they need a parent');
      }
      if (this.converts) throw new ManifestError('converts: only a parent the plugin defines can be converted');
    }
    const kinds = [
      ...(this.parent === undefined ? [] : [['parent', this.parent]]),
      ...this.children.map((k) => ['children', k]),
      ...this.related.map((k) => ['related', k]),
      ...this.watches.map((w) => ['watches', w.kind]),
      ...this.keepUnlisted.map((k) => ['keepUnlisted', k]),
      ...this.defaults.map((r) => ['defaults', r.kind]),
      ...this.validates.map((r) => ['validates', r.kind]),
    ];
    for (const [where, k] of kinds) {
      if (!k.version || !k.kind || !k.plural) throw new ManifestError(`${where}: ${k} needs a version, a kind and a plural`);
    }
    const stray = this.keepUnlisted.find((k) => !this.children.some((c) => sameKind(c, k)));
    if (stray !== undefined) throw new ManifestError(`keepUnlisted: ${stray} is not among the plugin's children`);
    if (this.converts && this.crds.length === 0) {
      throw new ManifestError("converts: the plugin converts its parent between its CRD's versions, but defines no CRD");
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
    for (const where of ['children', 'related', 'keepUnlisted']) {
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
    for (const where of ['defaults', 'validates']) {
      this[where].forEach((r, i) => {
        if (!(r instanceof AdmissionRule) || !(r.kind instanceof KindRef)) {
          throw new ManifestError(`${where}[${i}]: expected an AdmissionRule of a KindRef, found ${show(r)}`);
        }
        const op = r.operations.find((o) => !Object.values(Operation).includes(o));
        if (op !== undefined) throw new ManifestError(`${where}[${i}].operations: ${show(op)} is none of ${Object.values(Operation).join(', ')}`);
      });
    }
    if (typeof this.converts !== 'boolean') throw new ManifestError(`converts: expected true or false, found ${show(this.converts)}`);
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

/** Whether two `KindRef`s name the same kind (Rust's `==` on the record). */
function sameKind(a, b) {
  return a.group === b.group && a.version === b.version && a.kind === b.kind && a.plural === b.plural && a.namespaced === b.namespaced;
}

function show(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
