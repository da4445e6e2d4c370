// Admission and conversion of the plugin's kinds: what Kubebuilder's defaulting,
// validating and conversion webhooks do, for the writes the manifest names in `defaults`
// and `validates` and the versions of its parent when it `converts`. The types a plugin
// uses; export.js holds the glue between them and the contract's records.

import { timeOf } from './request.js';

/** A write the API server asks about, as `AdmissionReview` and webhook rules spell it. */
export const Operation = Object.freeze({ Create: 'CREATE', Update: 'UPDATE', Delete: 'DELETE', Connect: 'CONNECT' });

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
