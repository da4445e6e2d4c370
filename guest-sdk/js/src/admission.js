// Admission and conversion of the plugin's kinds: what Kubebuilder's defaulting,
// validating and conversion webhooks do, for the writes the manifest names in `defaults`
// and `validates` and the versions of its parent when it `converts`. The types a plugin
// uses, and the glue between them and the contract's records.

import { ReconcileError } from './errors.js';
import { KindRef, isPlainObject } from './kinds.js';
import { KubeObject } from './objects.js';
import { timeOf } from './request.js';

/** A write the API server asks about, as `AdmissionReview` and webhook rules spell it. */
export const Operation = Object.freeze({ Create: 'CREATE', Update: 'UPDATE', Delete: 'DELETE', Connect: 'CONNECT' });

const OPERATIONS = Object.values(Operation);

/** The writes of one kind an admission export is asked about: `operations` of `kind`
 * (default: creates and updates). */
export class AdmissionRule {
  constructor(kind, operations = []) {
    this.kind = kind;
    this.operations = [...operations];
    Object.freeze(this);
  }

  /** The operations this rule asks about, the default filled in. */
  get effectiveOperations() {
    return this.operations.length === 0 ? [Operation.Create, Operation.Update] : [...this.operations];
  }

  /** Whether the rule selects `operation` of an object of `kind`. */
  selects(kind, operation) {
    const k = this.kind;
    return k.group === kind.group && k.version === kind.version && k.kind === kind.kind && this.effectiveOperations.includes(operation);
  }
}

/**
 * Why a write is refused: throw one from `default` or `validate` (or return
 * `Verdict.deny(denial)`). With field causes the API server answers 422 Invalid naming
 * the fields, as for a schema violation; without, 403 Forbidden with the message.
 */
export class Denial extends Error {
  constructor(message = '', causes = []) {
    super(message);
    this.name = 'Denial';
    /** The fields blamed: `{ field, message, reason }` (`reason` Kubernetes' cause type). */
    this.causes = causes.map((c) => ({ field: c.field, message: c.message, reason: c.reason ?? 'FieldValueInvalid' }));
    /** The message without the causes (`message` lists them too, as the API server does). */
    this.summary = message;
    this.message = shownDenial(message, this.causes);
  }

  /** A refusal blaming `field` (`spec.schedule`); `message` says why (422 Invalid). */
  static invalid(field, message) {
    return new Denial('').field(field, message);
  }

  /** Blames `field` too: `message` says why, `reason` is Kubernetes' cause type
   * (`FieldValueInvalid` unless given: `FieldValueRequired`, `FieldValueNotSupported`...).
   * (Not `cause`: that is every Error's own property.) */
  field(field, message, reason = 'FieldValueInvalid') {
    this.causes.push({ field, message, reason });
    this.message = shownDenial(this.summary, this.causes);
    return this;
  }
}

/** The denial as the API server lists it: the message, then `field: message` per cause. */
function shownDenial(message, causes) {
  const parts = causes.map((c) => `${c.field}: ${c.message}`);
  return [message, ...parts].filter((p) => p !== '').join(', ');
}

/** What validation decided about a write: allowed, or denied, with warnings for the client
 * (`kubectl` prints them as `Warning: ...`). */
export class Verdict {
  constructor(denied = undefined, warnings = []) {
    /** The `Denial`, or `undefined`: allowed. */
    this.denied = denied;
    this.warnings = [...warnings];
  }

  static allow() {
    return new Verdict();
  }

  static deny(denial) {
    return new Verdict(denial instanceof Denial ? denial : new Denial(String(denial)));
  }

  /** Shows `warning` to the client. */
  warning(warning) {
    this.warnings.push(String(warning));
    return this;
  }

  get allowed() {
    return this.denied === undefined;
  }
}

/** What defaulting did to a written object: store it unchanged, as a whole new object, or
 * with an RFC 6902 JSON patch applied; with warnings for the client. */
export class Defaulted {
  constructor(mutation, warnings = []) {
    /** `{ unchanged: true }`, `{ object }` or `{ patch }`. */
    this.mutation = mutation;
    this.warnings = [...warnings];
  }

  static unchanged() {
    return new Defaulted({ unchanged: true });
  }

  /** Store `object` (the whole object) instead; the host sends the API server the patch
   * to it. */
  static object(object) {
    return new Defaulted({ object });
  }

  /** Apply the RFC 6902 JSON `patch` (a list of operations) to the written object. */
  static patch(patch) {
    return new Defaulted({ patch });
  }

  warning(warning) {
    this.warnings.push(String(warning));
    return this;
  }
}

/** One write the API server asks about: every field of the contract's record, the objects
 * and settings parsed from JSON, the time as `nowRfc3339`. */
export class AdmissionRequest {
  constructor({ kind, operation, object, oldObject, userInfo, options = null, nowRfc3339 = '1970-01-01T00:00:00Z', config = null, ...fields }) {
    // The contract's other fields, as they were sent: uid, subResource, namespace, name,
    // dryRun.
    Object.assign(this, fields);
    this.uid ??= '';
    this.name ??= '';
    this.dryRun = Boolean(this.dryRun);
    /** The object's kind, in the version the rule names (a `KindRef`). */
    this.kind = kind;
    /** `Operation.Create`, `Update`, `Delete` or `Connect`. */
    this.operation = operation;
    /** The object as it would be stored (a `KubeObject`); `undefined` on delete. */
    this.object = object;
    /** The stored object: update and delete. */
    this.oldObject = oldObject;
    /** `{ username, uid, groups, extra }`, `extra` an object of lists. */
    this.userInfo = { username: '', uid: '', groups: [], extra: {}, ...userInfo };
    /** `CreateOptions`, `UpdateOptions` or `DeleteOptions`; `null` if none. */
    this.options = options;
    this.nowRfc3339 = nowRfc3339;
    /** The plugin's settings (`null` if none). */
    this.config = config;
  }

  /** The host's current time (the sandbox has no clock). */
  get now() {
    return timeOf(this.nowRfc3339);
  }
}

// ---- the glue ------------------------------------------------------------------

const WIT_OPERATIONS = { create: Operation.Create, update: Operation.Update, delete: Operation.Delete, connect: Operation.Connect };

/** `Operation.Create`... as the contract's enum (`create`...). */
export function operationToWit(operation) {
  if (!OPERATIONS.includes(operation)) throw new TypeError(`an operation is one of ${OPERATIONS.join(', ')}, not ${JSON.stringify(operation)}`);
  return operation.toLowerCase();
}

function parsed(what, text) {
  if (text === undefined || text === null) return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Denial(`${what} is not JSON: ${e.message}`);
  }
}

function objectOf(what, text) {
  const value = parsed(what, text);
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) throw new Denial(`${what} is not a JSON object`);
  return new KubeObject(value);
}

/** The request as a plugin sees it; a request the plugin cannot read is a `Denial`. */
export function admissionRequestFromWit({ kind: k, operation, object, oldObject, userInfo, options, now, config, ...fields }) {
  return new AdmissionRequest({
    ...fields,
    kind: new KindRef(k.group, k.version, k.kind, k.plural, k.namespaced),
    operation: WIT_OPERATIONS[operation],
    object: objectOf('object', object),
    oldObject: objectOf('old object', oldObject),
    userInfo: { ...userInfo, groups: [...userInfo.groups], extra: Object.fromEntries(userInfo.extra) },
    options: parsed('options', options) ?? null,
    nowRfc3339: now,
    config: parsed('config', config) ?? null,
  });
}

/** The contract's record of `r`, as the host sends it (for `@kubewasm/sdk/testing`): the
 * inverse of `admissionRequestFromWit`. */
export function admissionRequestToWit(r, kindToWit) {
  const { kind, operation, object, oldObject, userInfo, options, nowRfc3339, config, ...fields } = r;
  return {
    ...fields,
    kind: kindToWit(kind),
    operation: operationToWit(operation),
    object: object === undefined ? undefined : JSON.stringify(object),
    oldObject: oldObject === undefined ? undefined : JSON.stringify(oldObject),
    userInfo: {
      username: userInfo.username,
      uid: userInfo.uid,
      groups: [...userInfo.groups],
      extra: Object.entries(userInfo.extra).map(([k, v]) => [k, [...v]]),
    },
    options: JSON.stringify(options ?? null),
    now: nowRfc3339,
    config: JSON.stringify(config ?? null),
  };
}

function denialToWit(d) {
  return { message: d.summary, causes: d.causes.map((c) => ({ field: String(c.field), message: String(c.message), reason: String(c.reason) })) };
}

/** What a plugin threw, as a denial: its `Denial`, or the message of a `ReconcileError`
 * (a field `KubeObject.field` found missing); anything else is a bug, and traps. */
function denied(e) {
  if (e instanceof Denial) return e;
  if (e instanceof ReconcileError) return new Denial(e.message);
  return undefined;
}

/**
 * The plugin's `default(request)` as the contract's `defaulted` record; a `Denial` is
 * thrown as the contract's `denial` record. A plugin without `default` changes nothing. A
 * plugin that changes `request.object` in place and returns nothing stores the object as
 * it left it (Kubebuilder's defaulter).
 */
export function defaultFor(p, request, toJson, uncaught) {
  try {
    const req = admissionRequestFromWit(request);
    if (typeof p.default !== 'function') return { mutation: { tag: 'unchanged' }, warnings: [] };
    const before = req.object === undefined ? undefined : toJson('object', req.object);
    const answer = p.default(req);
    if (typeof answer?.then === 'function') throw new TypeError('default returned a Promise: make it synchronous');
    if (answer === undefined) {
      const after = req.object === undefined ? undefined : toJson('defaulted object', req.object);
      return { mutation: after === before ? { tag: 'unchanged' } : { tag: 'object', val: after }, warnings: [] };
    }
    if (!(answer instanceof Defaulted)) throw new TypeError(`default returned ${typeName(answer)}, not a Defaulted (or nothing)`);
    const m = answer.mutation;
    let mutation;
    if (m.object !== undefined) mutation = { tag: 'object', val: toJson('defaulted object', m.object) };
    else if (m.patch !== undefined) mutation = { tag: 'patch', val: toJson('patch', m.patch) };
    else mutation = { tag: 'unchanged' };
    return { mutation, warnings: answer.warnings.map(String) };
  } catch (e) {
    const d = denied(e);
    if (d !== undefined) throw denialToWit(d);
    throw uncaught(e, 'default');
  }
}

/** The plugin's `validate(request)` as the contract's `verdict` record: what it returned
 * (a `Verdict`, or nothing: allowed) or the `Denial` it threw. A plugin without
 * `validate` allows everything. */
export function validateFor(p, request, uncaught) {
  try {
    const req = admissionRequestFromWit(request);
    if (typeof p.validate !== 'function') return { denied: undefined, warnings: [] };
    const answer = p.validate(req) ?? Verdict.allow();
    if (typeof answer?.then === 'function') throw new TypeError('validate returned a Promise: make it synchronous');
    if (!(answer instanceof Verdict)) throw new TypeError(`validate returned ${typeName(answer)}, not a Verdict (or nothing)`);
    const d = answer.denied === undefined ? undefined : denialToWit(Verdict.deny(answer.denied).denied);
    return { denied: d, warnings: answer.warnings.map(String) };
  } catch (e) {
    const d = denied(e);
    if (d !== undefined) return { denied: denialToWit(d), warnings: [] };
    throw uncaught(e, 'validate');
  }
}

/** Each object through the plugin's `convert(object, desiredApiVersion)`, in order; an
 * error (a `ReconcileError` or `Denial` it threw, or an answer that is no object) is
 * thrown as the contract's error text naming the object. */
export function convertFor(p, request, toJson, uncaught) {
  const objects = request.objects.map((text, i) => {
    try {
      const value = JSON.parse(text);
      if (!isPlainObject(value)) throw new Error('not a JSON object');
      return new KubeObject(value);
    } catch (e) {
      // A string is the contract's error of `convert`, not a trap.
      throw `object #${i} is not a JSON object: ${e.message}`;
    }
  });
  return objects.map((object, i) => {
    const where = `object #${i} (${object.kind ?? ''} ${JSON.stringify(object.name)})`;
    if (typeof p.convert !== 'function') throw `${where}: this plugin converts no objects, and was asked to convert a ${object.kind ?? ''}`;
    let converted;
    try {
      converted = p.convert(object, request.desiredApiVersion);
    } catch (e) {
      const d = denied(e);
      if (d !== undefined) throw `${where}: ${d.message}`;
      throw uncaught(e, 'convert');
    }
    if (!isPlainObject(converted)) throw `${where}: convert returned ${typeName(converted)}, not an object`;
    try {
      return toJson('converted object', converted);
    } catch (e) {
      throw `${where}: ${e.message}`;
    }
  });
}

function typeName(value) {
  if (value === null) return 'null';
  if (typeof value === 'object') return value.constructor?.name ?? 'an object';
  return typeof value;
}
