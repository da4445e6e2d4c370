// Export a plugin as the component's implementation of the contract.
//
// `export const reconciler = plugin({ describe, reconcile, related?, handle? })` is all a
// plugin module needs: the build finds the value `plugin()` returned among the module's
// exports (under any name) and exports the contract's interfaces from it. The functions
// below are the glue between the WIT records and the SDK's types: decode the request (or
// the event), call the plugin, encode the answer. `@kubewasm/sdk/testing` calls the same
// functions natively with the same records, so tests exercise the path a WebAssembly call
// takes.

import { AdmissionRequest, Defaulted, Denial, Operation, Verdict } from './admission.js';
import { ReconcileError, PermanentError } from './errors.js';
import { ObjectEvent } from './event.js';
import { KindRef, isPlainObject } from './kinds.js';
import { Manifest } from './manifest.js';
import { typeName } from './names.js';
import { KubeObject } from './objects.js';
import { LabelOperator, Query } from './query.js';
import { Request } from './request.js';
import { EventType, Response } from './response.js';
import { authorsFrame, hasSourceMap, mapStack } from './sourcemap.js';

const PLUGIN = Symbol.for('kubewasm.plugin');

const wire = {
  /** How the component's bindings take a u64: a number (QuickJS) or a BigInt (jco's
   * StarlingMonkey); the build's entry says which. */
  u64: (n) => n,
};

/** Sets how u64 values cross into the component (the build's entry calls it). */
export function useBigIntU64() {
  wire.u64 = (n) => BigInt(n);
}

/**
 * Exports `impl` as the plugin of the module: `export const reconciler = plugin(impl)`.
 *
 * `impl` is an object, or a class (instantiated for each call), with `describe()` returning
 * a `Manifest`, and `reconcile(request)` returning a `Response` (a reconciler, which may
 * have `related(parent)` returning a list of `Query`; default: none), or `handle(event)`
 * taking an `ObjectEvent` (an event handler), or both; the manifest says which the host
 * calls. Each call runs in a fresh component instance: nothing survives between calls.
 */
export function plugin(impl) {
  const proto = typeof impl === 'function' ? impl.prototype : impl;
  if (typeof proto?.describe !== 'function') throw new TypeError('a kubewasm plugin needs a method `describe`');
  if (!['reconcile', 'handle', 'default', 'validate', 'convert'].some((m) => typeof proto[m] === 'function')) {
    throw new TypeError('a kubewasm plugin needs a method `reconcile`, `handle`, `default`, `validate` or `convert`');
  }
  const fresh = () => (typeof impl === 'function' ? new impl() : impl);
  return {
    [PLUGIN]: impl,
    describe: () => trapping(() => describe(fresh())),
    related: (parent) => trapping(() => related(fresh(), parent)),
    reconcile: (request) => reconcile(fresh(), request),
    handle: (event) => handle(fresh(), event),
    default: (request) => defaultFor(fresh(), request),
    validate: (request) => validateFor(fresh(), request),
    convert: (request) => convertFor(fresh(), request),
  };
}

/**
 * The component's exports, one per WIT interface the contract's world exports
 * (`plugin-info`, `reconciler`, `handler`, `admission`), of the value `plugin()` returned among
 * `module`'s exports (or of its `reconciler`, the contract's records written without
 * the SDK): the build's entry exports them.
 */
export function componentExports(module) {
  const exported = Object.values(module).filter((value) => pluginOf(value) !== undefined);
  // A module written against the contract's records, without the SDK, exports them as
  // `reconciler` itself.
  if (exported.length === 0 && typeof module.reconciler?.describe === 'function') exported.push(module.reconciler);
  if (exported.length !== 1) {
    const names = Object.keys(module).join(', ') || 'none';
    throw new TypeError(`the plugin module must export one value of plugin(...), e.g. \`export const reconciler = plugin({...})\`; it exports ${exported.length} (exports: ${names})`);
  }
  const [p] = exported;
  return {
    pluginInfo: { describe: p.describe },
    reconciler: { related: p.related, reconcile: p.reconcile },
    handler: { handle: p.handle },
    admission: p.default === undefined ? NO_ADMISSION : { default: p.default, validate: p.validate, convert: p.convert },
  };
}

/** The admission exports of a module written against the contract's records that admits
 * nothing: its manifest declares no `defaults`, `validates` or `converts`, so the host
 * never calls them. */
const NO_ADMISSION = {
  default: () => ({ mutation: { tag: 'unchanged' }, warnings: [] }),
  validate: () => ({ denied: undefined, warnings: [] }),
  convert: () => {
    throw 'this plugin converts no objects';
  },
};

/** The object or class `plugin()` exported, or `undefined` for anything else. */
export function pluginOf(exported) {
  return exported?.[PLUGIN];
}

// ---- describe ------------------------------------------------------------------

export function describe(p) {
  const manifest = p.describe();
  if (!(manifest instanceof Manifest)) throw new TypeError(`describe returned ${typeName(manifest)}, not a Manifest`);
  manifest.checkTypes();
  return {
    name: manifest.name,
    parent: manifest.parent === undefined ? undefined : kindToWit(manifest.parent),
    children: manifest.children.map(kindToWit),
    related: manifest.related.map(kindToWit),
    finalizer: Boolean(manifest.finalizer),
    crds: [...manifest.crds],
    limits: { deadlineMs: manifest.limits.deadlineMs ?? undefined, memoryMib: manifest.limits.memoryMib ?? undefined },
    watches: manifest.watches.map((w) => ({ kind: kindToWit(w.kind), labelSelector: w.labelSelector, fieldSelector: w.fieldSelector })),
    outbound: [...manifest.outbound],
    keepUnlisted: manifest.keepUnlisted.map(kindToWit),
    defaults: manifest.defaults.map(ruleToWit),
    validates: manifest.validates.map(ruleToWit),
    converts: Boolean(manifest.converts),
  };
}

export function kindToWit(k) {
  return { group: k.group, version: k.version, kind: k.kind, plural: k.plural, namespaced: k.namespaced };
}

function ruleToWit(r) {
  return { kind: kindToWit(r.kind), operations: r.operations.map(operationToWit) };
}

// ---- related -------------------------------------------------------------------

const OPERATORS = {
  [LabelOperator.In]: 'in',
  [LabelOperator.NotIn]: 'not-in',
  [LabelOperator.Exists]: 'exists',
  [LabelOperator.DoesNotExist]: 'does-not-exist',
};

export function related(p, parent) {
  if (typeof p.related !== 'function' || typeof p.reconcile !== 'function') return [];
  let value;
  try {
    value = JSON.parse(parent);
  } catch {
    // A parent that is not JSON cannot match anything; the host never sends one.
    return [];
  }
  const queries = p.related(new KubeObject(isPlainObject(value) ? value : {})) ?? [];
  return queries.map((q, i) => {
    if (!(q instanceof Query)) throw new TypeError(`related returned ${typeName(q)} at #${i}, not a Query`);
    return queryToWit(q);
  });
}

function queryToWit(q) {
  let selector;
  if (q.selector.names !== undefined) selector = { tag: 'names', val: [...q.selector.names] };
  else if (q.selector.requirements !== undefined) {
    selector = {
      tag: 'labels',
      val: q.selector.requirements.map((r) => ({ key: r.key, operator: OPERATORS[r.operator], values: [...r.values] })),
    };
  } else selector = { tag: 'all' };
  return { kind: kindToWit(q.kind), namespace: q.namespace, selector };
}

// ---- reconcile -----------------------------------------------------------------

/**
 * The plugin's answer as WIT records. A `ReconcileError` the plugin throws (or a request
 * or answer that is not JSON) is thrown as the contract's `reconcile-error` record. Any
 * other exception traps the call (QuickJS), and the host shows its message and stack;
 * jco's StarlingMonkey glue makes it the call's error instead, with its message.
 */
export function reconcile(p, request) {
  if (typeof p.reconcile !== 'function') throw { message: 'this plugin reconciles nothing: its manifest names no parent', retryable: false };
  try {
    const response = p.reconcile(requestFromWit(request));
    if (typeof response?.then === 'function') {
      throw new TypeError('reconcile returned a Promise: make it synchronous (http.fetch returns the response itself)');
    }
    if (!(response instanceof Response)) throw new TypeError(`reconcile returned ${typeName(response)}, not a Response`);
    return responseToWit(response);
  } catch (e) {
    if (e instanceof ReconcileError) throw { message: e.message, retryable: e.retryable };
    throw uncaught(e, 'reconcile');
  }
}

// ---- handle --------------------------------------------------------------------

/**
 * Hands the plugin one change of a watched object. A `ReconcileError` the plugin throws
 * (or an event that is not JSON) is thrown as the contract's `reconcile-error` record;
 * any other exception traps the call, as for `reconcile`.
 */
export function handle(p, event) {
  if (typeof p.handle !== 'function') throw { message: 'this plugin handles no events: its manifest declares no watches', retryable: false };
  try {
    const result = p.handle(eventFromWit(event));
    if (typeof result?.then === 'function') {
      throw new TypeError('handle returned a Promise: make it synchronous (http.fetch returns the response itself)');
    }
    if (result !== undefined) throw new TypeError(`handle returned ${typeName(result)}; return nothing, or throw to fail`);
  } catch (e) {
    if (e instanceof ReconcileError) throw { message: e.message, retryable: e.retryable };
    throw uncaught(e, 'handle');
  }
}

/** The event as a plugin sees it: the objects and the settings parsed from JSON, the kind
 * a `KindRef`, the time as `nowRfc3339`, every other field of the contract's record as it
 * was sent. */
export function eventFromWit({ now, ...e }) {
  const k = e.kind;
  return new ObjectEvent({
    ...e,
    kind: new KindRef(k.group, k.version, k.kind, k.plural, k.namespaced),
    object: object('object', e.object),
    oldObject: e.oldObject === undefined || e.oldObject === null ? undefined : object('old object', e.oldObject),
    nowRfc3339: now,
    config: parse('config', e.config),
  });
}

/** Calls `f`; what it throws traps the call (see `uncaught`). */
function trapping(f) {
  try {
    return f();
  } catch (e) {
    throw uncaught(e, 'the plugin');
  }
}

/**
 * What to throw for an exception that is to trap the call, so that the host can show its
 * message and stack: an Error (the engines would take any other thrown value for a
 * `reconcile-error` record), written to stderr where there is a console
 * (StarlingMonkey), else (QuickJS, whose runtime reports the message and stack of the
 * exception) with its name (`TypeError`) in the message.
 */
function uncaught(e, who) {
  const error = e instanceof Error ? e : new Error(`${who} threw ${typeName(e)} ${shown(e)}, not an Error`);
  locate(error);
  if (typeof console !== 'undefined') console.error(`Uncaught ${error.stack ?? error}`);
  else if (!String(error.message).startsWith(`${error.name}:`)) error.message = `${error.name}: ${error.message}`;
  return error;
}

/**
 * `error` with its stack in the plugin's sources rather than the bundle (where the build
 * appended the map), and the first of those positions in the author's code after its
 * message (`... (at app.ts:17:10)`), the line the host reports first.
 */
function locate(error) {
  try {
    if (!hasSourceMap() || typeof error.stack !== 'string') return;
    error.stack = mapStack(error.stack);
    const at = authorsFrame(error.stack);
    if (at !== undefined) error.message = `${error.message} (at ${at})`;
  } catch {
    // An error whose stack or message cannot be set is reported as it is.
  }
}

/** `text` parsed; `Failure` (a `PermanentError`, or a `Denial` for a write to admit)
 * when it is not JSON. */
function parse(what, text, Failure = PermanentError) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Failure(`${what} is not JSON: ${e.message}`);
  }
}

/** `text` as a `KubeObject`; `Failure` when it is not a JSON object. */
function object(what, text, Failure = PermanentError) {
  const value = parse(what, text, Failure);
  if (!isPlainObject(value)) throw new Failure(`${what} is not a JSON object`);
  return new KubeObject(value);
}

/** The request as a plugin sees it: the objects and the settings parsed from JSON, the
 * time as `nowRfc3339`, every other field of the contract's record as it was sent. */
export function requestFromWit({ now, ...r }) {
  return new Request({
    ...r,
    parent: object('parent', r.parent),
    children: r.children.map((t) => object('child', t)),
    related: r.related.map((t) => object('related object', t)),
    nowRfc3339: now,
    config: parse('config', r.config),
  });
}

/** JSON text of `value`, keys sorted (as Go's unstructured objects and k8s-openapi write
 * them), so that a render does not depend on the order an object was built in. */
export function toJson(what, value) {
  let text;
  try {
    text = JSON.stringify(sortKeys(what, value));
  } catch (e) {
    throw new PermanentError(`${what} does not serialize to JSON: ${e.message}`);
  }
  if (text === undefined) throw new PermanentError(`${what} does not serialize to JSON: ${typeName(value)}`);
  return text;
}

function sortKeys(what, value) {
  if (Array.isArray(value)) return value.map((v) => sortKeys(what, v));
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new PermanentError(`${what} does not serialize to JSON: ${value} is not a JSON number`);
  }
  if (typeof value === 'bigint') throw new PermanentError(`${what} does not serialize to JSON: a BigInt (${value}n)`);
  if (value === null || typeof value !== 'object' || typeof value.toJSON === 'function') return value;
  const out = {};
  for (const key of Object.keys(value).sort()) {
    if (value[key] !== undefined) out[key] = sortKeys(what, value[key]);
  }
  return out;
}

function pairs(what, map) {
  return Object.entries(map ?? {}).map(([key, value]) => {
    if (typeof value !== 'string') {
      throw new PermanentError(`${what} ${JSON.stringify(key)}: keys and values must be strings, found ${JSON.stringify(value)}`);
    }
    return [key, value];
  });
}

function millis(after) {
  if (after === undefined || after === null) return undefined;
  if (typeof after !== 'number' || Number.isNaN(after)) {
    throw new PermanentError(`requeueAfterMs must be a number of milliseconds, found ${JSON.stringify(after)}`);
  }
  return wire.u64(Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, Math.floor(after))));
}

export function responseToWit(r) {
  const events = r.events.map((e, i) => {
    if (e.type !== EventType.Normal && e.type !== EventType.Warning) {
      throw new PermanentError(`event #${i}: type must be EventType.Normal or EventType.Warning, found ${JSON.stringify(e.type)}`);
    }
    return { type: e.type === EventType.Normal ? 'normal' : 'warning', reason: String(e.reason), message: String(e.message) };
  });
  return {
    children: r.children.map((c, i) => toJson(`child #${i}`, c)),
    status: r.status === undefined || r.status === null ? undefined : toJson('status', r.status),
    labels: pairs('label', r.labels),
    annotations: pairs('annotation', r.annotations),
    requeueAfterMs: millis(r.requeueAfterMs),
    events,
    finalized: Boolean(r.finalized),
    delete: (r.delete ?? []).map(String),
  };
}

/** A thrown value, for a message. */
function shown(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return '(not printable)';
  }
}

// ---- admission -----------------------------------------------------------------

const WIT_OPERATIONS = { create: Operation.Create, update: Operation.Update, delete: Operation.Delete, connect: Operation.Connect };

const OPERATIONS = Object.values(Operation);

/** `Operation.Create`... as the contract's enum (`create`...). */
export function operationToWit(operation) {
  if (!OPERATIONS.includes(operation)) throw new TypeError(`an operation is one of ${OPERATIONS.join(', ')}, not ${JSON.stringify(operation)}`);
  return operation.toLowerCase();
}

/** An optional object of a write: `undefined` when absent, a `Denial` when not an object. */
function objectOf(what, text) {
  return text === undefined || text === null ? undefined : object(what, text, Denial);
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
    options: parse('options', options, Denial),
    nowRfc3339: now,
    config: parse('config', config, Denial),
  });
}

/** The contract's record of `r`, as the host sends it (for `@kubewasm/sdk/testing`): the
 * inverse of `admissionRequestFromWit`. */
export function admissionRequestToWit(r) {
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
export function defaultFor(p, request) {
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
export function validateFor(p, request) {
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
export function convertFor(p, request) {
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
