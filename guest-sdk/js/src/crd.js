// CustomResourceDefinitions from a small schema builder: one description of the spec
// gives the OpenAPI schema the API server validates and, in TypeScript, the spec's type.

import { KindRef } from './kinds.js';

/** A field's schema under construction; each marker returns a new builder. */
class Schema {
  constructor(json, optional = false) {
    this._json = json;
    this._optional = optional;
    Object.freeze(this);
  }

  _with(extra, optional = this._optional) {
    return new this.constructor({ ...this._json, ...extra }, optional);
  }

  /** The field may be absent: not in the object's `required`. */
  optional() {
    return this._with({}, true);
  }

  /** `+kubebuilder:default`: what the API server sets when the field is absent. */
  default(value) {
    return this._with({ default: value });
  }

  /** What `kubectl explain` shows. */
  description(text) {
    return this._with({ description: text });
  }

  /** `+kubebuilder:validation:Enum`: the values allowed. */
  enum(values) {
    return this._with({ enum: [...values] });
  }

  /** The OpenAPI v3 schema (a CRD's JSONSchemaProps). */
  json() {
    // A copy the caller may change; the component's engine has no structuredClone.
    return JSON.parse(JSON.stringify(this._json));
  }
}

class StringSchema extends Schema {
  minLength(n) { return this._with({ minLength: n }); }
  maxLength(n) { return this._with({ maxLength: n }); }
  /** `+kubebuilder:validation:Pattern`: a regular expression the string matches. */
  pattern(regex) { return this._with({ pattern: regex instanceof RegExp ? regex.source : regex }); }
  format(format) { return this._with({ format }); }
}

class NumberSchema extends Schema {
  min(n) { return this._with({ minimum: n }); }
  max(n) { return this._with({ maximum: n }); }
  /** Greater than `n`. */
  gt(n) { return this._with({ minimum: n, exclusiveMinimum: true }); }
  /** Less than `n`. */
  lt(n) { return this._with({ maximum: n, exclusiveMaximum: true }); }
  multipleOf(n) { return this._with({ multipleOf: n }); }
  format(format) { return this._with({ format }); }
}

class ArraySchema extends Schema {
  minItems(n) { return this._with({ minItems: n }); }
  maxItems(n) { return this._with({ maxItems: n }); }
  /** `+listType=set`: items are unique. */
  unique() { return this._with({ 'x-kubernetes-list-type': 'set' }); }
}

class ObjectSchema extends Schema {
  minProperties(n) { return this._with({ minProperties: n }); }
  maxProperties(n) { return this._with({ maxProperties: n }); }
}

function object(shape) {
  const properties = {};
  const required = [];
  for (const [name, field] of Object.entries(shape)) {
    if (!(field instanceof Schema)) {
      throw new TypeError(`s.object: field ${name} is not a schema (s.string(), s.integer()...)`);
    }
    properties[name] = field.json();
    if (!field._optional && !('default' in field._json)) required.push(name);
  }
  return new ObjectSchema(required.length ? { type: 'object', properties, required } : { type: 'object', properties });
}

/** The schema builder: `s.object({ replicas: s.integer().min(1).default(1) })`. */
export const s = Object.freeze({
  string: () => new StringSchema({ type: 'string' }),
  integer: () => new NumberSchema({ type: 'integer' }),
  int32: () => new NumberSchema({ type: 'integer', format: 'int32' }),
  int64: () => new NumberSchema({ type: 'integer', format: 'int64' }),
  number: () => new NumberSchema({ type: 'number' }),
  boolean: () => new Schema({ type: 'boolean' }),
  /** A string of one of `values`. */
  enum: (values) => new StringSchema({ type: 'string', enum: [...values] }),
  array: (items) => new ArraySchema({ type: 'array', items: items.json() }),
  object,
  /** An object of any keys whose values are all `values` (a Go map). */
  record: (values) => new ObjectSchema({ type: 'object', additionalProperties: values.json() }),
  /** Anything, kept as written (`+kubebuilder:pruning:PreserveUnknownFields`). */
  any: () => new Schema({ 'x-kubernetes-preserve-unknown-fields': true }),
  /** An int or a string, as a Service's targetPort (`+kubebuilder:validation:XIntOrString`). */
  intOrString: () => new Schema({ 'x-kubernetes-int-or-string': true }),
});

/**
 * One version of a custom kind: its schema from `spec` (and `status`, which also turns
 * the status subresource on), the names `kubectl` knows it by.
 */
export class CustomResource {
  constructor({ group, version, kind, plural, namespaced = true, spec, status, shortNames = [], categories = [], printerColumns = [], served = true, deprecated = false }) {
    for (const [name, value] of Object.entries({ group, version, kind })) {
      if (typeof value !== 'string' || !value) throw new TypeError(`CustomResource: ${name} must be a non-empty string`);
    }
    if (!(spec instanceof ObjectSchema)) throw new TypeError(`CustomResource ${kind}: spec must be an s.object(...)`);
    if (status !== undefined && !(status instanceof ObjectSchema)) {
      throw new TypeError(`CustomResource ${kind}: status must be an s.object(...)`);
    }
    Object.assign(this, { group, version, kind, plural: plural ?? `${kind.toLowerCase()}s`, namespaced, spec, status, shortNames, categories, printerColumns, served, deprecated });
    Object.freeze(this);
  }

  /** The kind, for a manifest's parent. */
  get kindRef() {
    return new KindRef(this.group, this.version, this.kind, this.plural, this.namespaced);
  }

  /** The version's `openAPIV3Schema`. */
  schema() {
    const properties = { spec: this.spec.json() };
    if (this.status) properties.status = this.status.json();
    return { type: 'object', properties };
  }

  /** The CRD of this one version, as JSON text for a manifest's `crds`. */
  crd() {
    return crd([this]);
  }

  _version(storage) {
    const version = { name: this.version, served: this.served, storage, schema: { openAPIV3Schema: this.schema() } };
    if (this.deprecated) version.deprecated = true;
    if (this.status) version.subresources = { status: {} };
    if (this.printerColumns.length) {
      version.additionalPrinterColumns = this.printerColumns.map(({ name, type, jsonPath, description, priority, format }) => ({
        name, type, jsonPath,
        ...(description === undefined ? {} : { description }),
        ...(priority === undefined ? {} : { priority }),
        ...(format === undefined ? {} : { format }),
      }));
    }
    return version;
  }
}

/**
 * The CRD of one kind in several versions, `storage` naming the stored one (with one
 * version, that one), as JSON text for a manifest's `crds`.
 */
export function crd(versions, { storage } = {}) {
  if (!versions.length) throw new TypeError('crd: no version given');
  const [first] = versions;
  for (const v of versions) {
    if (v.group !== first.group || v.kind !== first.kind || v.plural !== first.plural || v.namespaced !== first.namespaced) {
      throw new TypeError(`crd: version ${v.version} is not of ${first.kind}.${first.group}`);
    }
  }
  const names = versions.map((v) => v.version);
  if (new Set(names).size !== names.length) throw new TypeError(`crd: a version is given twice in ${names.join(', ')}`);
  const stored = storage ?? (versions.length === 1 ? first.version : undefined);
  if (!names.includes(stored)) throw new TypeError(`crd: the storage version ${JSON.stringify(stored)} is not among ${names.join(', ')}`);
  const specNames = { kind: first.kind, listKind: `${first.kind}List`, plural: first.plural, singular: first.kind.toLowerCase() };
  const shortNames = [...new Set(versions.flatMap((v) => v.shortNames))];
  if (shortNames.length) specNames.shortNames = shortNames;
  const categories = [...new Set(versions.flatMap((v) => v.categories))];
  if (categories.length) specNames.categories = categories;
  return JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${first.plural}.${first.group}` },
    spec: {
      group: first.group,
      names: specNames,
      scope: first.namespaced ? 'Namespaced' : 'Cluster',
      versions: versions.map((v) => v._version(v.version === stored)),
    },
  });
}
