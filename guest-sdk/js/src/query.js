// Related objects a plugin asks for, and which objects a query selects. Return queries
// from `related(parent)`; the host serves the objects they select in `request.related`,
// and reconciles the parent again whenever one of them changes.

import { isPlainObject } from './kinds.js';

/** How a label requirement compares a label's value. */
export const LabelOperator = Object.freeze({
  /** The label's value is one of `values`. */
  In: 'In',
  /** The label is absent or its value is none of `values`. */
  NotIn: 'NotIn',
  /** The label is present, whatever its value. */
  Exists: 'Exists',
  /** The label is absent. */
  DoesNotExist: 'DoesNotExist',
});

/** One requirement of a label selector. */
export class Requirement {
  constructor(key, operator, values = []) {
    if (!Object.values(LabelOperator).includes(operator)) {
      throw new TypeError(`requirement ${key}: operator ${JSON.stringify(operator)} is not a LabelOperator`);
    }
    this.key = key;
    this.operator = operator;
    this.values = [...values];
    Object.freeze(this);
  }

  matches(labels) {
    const value = Object.hasOwn(labels, this.key) ? labels[this.key] : undefined;
    const listed = value !== undefined && this.values.includes(value);
    switch (this.operator) {
      case LabelOperator.In:
        return listed;
      case LabelOperator.NotIn:
        return !listed;
      case LabelOperator.Exists:
        return value !== undefined;
      default:
        return value === undefined;
    }
  }
}

/** Which objects of a kind a query selects: all of them, those with given names, or
 * those whose labels meet every requirement. */
export class Selector {
  constructor({ names, requirements } = {}) {
    if (names !== undefined && requirements !== undefined) {
      throw new TypeError('a selector selects by names or by labels, not both');
    }
    this.names = names === undefined ? undefined : [...names];
    this.requirements = requirements === undefined ? undefined : [...requirements];
    Object.freeze(this);
  }

  static all() {
    return new Selector();
  }

  static named(names) {
    return new Selector({ names });
  }

  static labelled(requirements) {
    return new Selector({ requirements });
  }
}

/** Related objects wanted for one parent: objects of `kind` in `namespace` (`undefined`:
 * all namespaces, or a cluster-scoped kind) that `selector` selects. */
export class Query {
  constructor(kind, namespace = undefined, selector = Selector.all()) {
    this.kind = kind;
    this.namespace = namespace ?? undefined;
    this.selector = selector;
    Object.freeze(this);
  }

  /** Every object of `kind` in `namespace`. */
  static all(kind, namespace) {
    return new Query(kind, namespace, Selector.all());
  }

  /** The objects of `kind` named `names` in `namespace`. */
  static named(kind, namespace, names) {
    return new Query(kind, namespace, Selector.named(names));
  }

  /** The objects of `kind` in `namespace` carrying every label of `labels`. */
  static labelled(kind, namespace, labels) {
    const requirements = Object.entries(labels).map(([k, v]) => new Requirement(k, LabelOperator.In, [v]));
    return new Query(kind, namespace, Selector.labelled(requirements));
  }

  /** Whether `obj` (JSON) is one this query selects, as the host decides it. */
  matches(obj) {
    if (!this.kind.matches(obj)) return false;
    const meta = isPlainObject(obj.metadata) ? obj.metadata : {};
    if (this.namespace !== undefined && meta.namespace !== this.namespace) return false;
    if (this.selector.names !== undefined) return this.selector.names.includes(meta.name);
    if (this.selector.requirements !== undefined) {
      const labels = isPlainObject(meta.labels) ? meta.labels : {};
      return this.selector.requirements.every((r) => r.matches(labels));
    }
    return true;
  }
}
