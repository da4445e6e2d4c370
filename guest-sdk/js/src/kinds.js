// Kubernetes kinds and the REST resources that serve them.

/**
 * A Kubernetes kind and its REST resource (`plural`, for RBAC and paths).
 * `new KindRef('example.com', 'v1', 'Echo', 'echoes')` is namespaced; pass `false` last
 * for a cluster-scoped kind.
 */
export class KindRef {
  constructor(group, version, kind, plural, namespaced = true) {
    this.group = group;
    this.version = version;
    this.kind = kind;
    this.plural = plural;
    this.namespaced = namespaced;
    Object.freeze(this);
  }

  /** `group/version`, or just `version` for the core group, as in `apiVersion`. */
  get apiVersion() {
    return this.group ? `${this.group}/${this.version}` : this.version;
  }

  /** Whether `obj` (a JSON object) is of this kind. */
  matches(obj) {
    return isPlainObject(obj) && obj.kind === this.kind && obj.apiVersion === this.apiVersion;
  }

  toString() {
    return `${this.apiVersion} ${this.kind}`;
  }
}

export function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
