// A Kubernetes object as the host hands it over: the parsed JSON, with accessors for
// what plugins read most.

import { PermanentError } from './errors.js';
import { isPlainObject } from './kinds.js';

/**
 * Any Kubernetes object: its JSON fields (`obj.spec.image`) and accessors. Every accessor
 * tolerates a missing field (`name` is then `""`, `labels` `{}`), as the host always sends
 * whole objects but a hand-made test input may not.
 */
export class KubeObject {
  constructor(json = {}) {
    Object.assign(this, json);
  }

  get name() {
    return str(meta(this).name);
  }

  /** The namespace, or `undefined` (a cluster-scoped object). */
  get namespace() {
    const ns = meta(this).namespace;
    return typeof ns === 'string' ? ns : undefined;
  }

  get uid() {
    return str(meta(this).uid);
  }

  get labels() {
    return stringMap(meta(this).labels);
  }

  get annotations() {
    return stringMap(meta(this).annotations);
  }

  /** `metadata.generation`: bumped by the API server on each change of the spec. */
  get generation() {
    const g = meta(this).generation;
    return Number.isInteger(g) ? g : undefined;
  }

  get creationTimestamp() {
    return timestamp(meta(this).creationTimestamp);
  }

  /** Set once the object is being deleted. */
  get deletionTimestamp() {
    return timestamp(meta(this).deletionTimestamp);
  }

  /** `"Kind namespace/name"`, for messages. */
  describe() {
    const kind = str(this.kind);
    return this.namespace !== undefined ? `${kind} ${this.namespace}/${this.name}` : `${kind} ${this.name}`;
  }

  /**
   * The value at `path` (`"spec.ports[0].port"`), checked to be of `type`: `'string'`,
   * `'integer'`, `'number'`, `'boolean'`, `'array'`, `'object'` or `'any'`.
   *
   * A missing field returns `fallback` when one is given (`undefined` counts as none: use
   * `null` to get `null`). Otherwise a missing field, or one of another type, throws a
   * `PermanentError` naming the object and the path: the parent is wrong, and retrying
   * will not help until it changes. JSON `null` counts as missing.
   */
  field(path, type = 'any', ...fallback) {
    let value = this;
    let walked = '';
    for (const step of steps(path)) {
      if (typeof step === 'number') {
        walked += `[${step}]`;
        value = Array.isArray(value) ? value[step < 0 ? value.length + step : step] : undefined;
      } else {
        walked += walked ? `.${step}` : step;
        value = isPlainObject(value) && Object.hasOwn(value, step) ? value[step] : undefined;
      }
      if (value === undefined || value === null) {
        if (fallback.length > 0 && fallback[0] !== undefined) return fallback[0];
        throw new PermanentError(`${this.describe()}: ${walked}: missing field`);
      }
    }
    if (!TYPES[type]) throw new TypeError(`field: unknown type ${JSON.stringify(type)}; use one of ${Object.keys(TYPES).join(', ')}`);
    if (!TYPES[type].test(value)) {
      throw new PermanentError(`${this.describe()}: ${walked}: expected ${TYPES[type].name}, found ${jsonType(value)}`);
    }
    return value;
  }

  /** The uid in the ownerReference with `controller: true`. */
  get controllerUid() {
    const refs = meta(this).ownerReferences;
    for (const ref of Array.isArray(refs) ? refs : []) {
      if (isPlainObject(ref) && ref.controller === true) return typeof ref.uid === 'string' ? ref.uid : undefined;
    }
    return undefined;
  }

  /** Whether `owner` is this object's controller. */
  isControlledBy(owner) {
    return Boolean(owner.uid) && this.controllerUid === owner.uid;
  }

  /**
   * Metadata for a child of this object: `name`, this object's namespace and a copy of
   * its labels. The host adds the controller ownerReference when it applies the child;
   * the plugin need not.
   */
  childMeta(name) {
    const meta = {};
    const labels = this.labels;
    if (Object.keys(labels).length > 0) meta.labels = labels;
    meta.name = name;
    if (this.namespace !== undefined) meta.namespace = this.namespace;
    return meta;
  }

  /** Metadata for a child in `namespace`: what a cluster-scoped parent needs for its
   * namespaced children (a namespaced parent's children stay in its namespace). */
  childMetaIn(name, namespace) {
    return { ...this.childMeta(name), namespace };
  }

  /** A reference to this object, as events and a CronJob's `status.active` hold them. */
  objectReference() {
    const ref = {
      apiVersion: str(this.apiVersion),
      kind: str(this.kind),
      name: this.name,
      namespace: this.namespace,
      resourceVersion: meta(this).resourceVersion,
      uid: this.uid,
    };
    return Object.fromEntries(Object.entries(ref).filter(([, v]) => v));
  }
}

const TYPES = {
  string: { name: 'a string', test: (v) => typeof v === 'string' },
  integer: { name: 'an integer', test: (v) => Number.isInteger(v) },
  number: { name: 'a number', test: (v) => typeof v === 'number' },
  boolean: { name: 'a boolean', test: (v) => typeof v === 'boolean' },
  array: { name: 'a list', test: (v) => Array.isArray(v) },
  object: { name: 'an object', test: isPlainObject },
  any: { name: 'a value', test: () => true },
};

function jsonType(v) {
  if (typeof v === 'string') return 'a string';
  if (Number.isInteger(v)) return 'an integer';
  if (typeof v === 'number') return 'a number';
  if (typeof v === 'boolean') return 'a boolean';
  if (Array.isArray(v)) return 'a list';
  return 'an object';
}

function meta(obj) {
  return isPlainObject(obj.metadata) ? obj.metadata : {};
}

function str(v) {
  return typeof v === 'string' ? v : '';
}

function stringMap(v) {
  if (!isPlainObject(v)) return {};
  return Object.fromEntries(Object.entries(v).filter(([, value]) => typeof value === 'string'));
}

function timestamp(v) {
  if (typeof v !== 'string') return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

function steps(path) {
  const out = [];
  for (const part of path.split('.')) {
    const bracket = part.indexOf('[');
    const name = bracket < 0 ? part : part.slice(0, bracket);
    if (name) out.push(name);
    if (bracket >= 0) {
      for (const m of part.slice(bracket).matchAll(/\[(-?\d+)\]/g)) out.push(Number(m[1]));
    }
  }
  return out;
}
