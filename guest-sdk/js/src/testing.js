// Native tests of a plugin under `node --test`: no WebAssembly, no host.
//
// `reconcile(reconciler, parent, { children })` encodes the request as the host does,
// runs the same export glue as the component with the same WIT records, decodes the
// answer and checks it with a port of the host's own validation: an answer the host would
// refuse fails the test with the host's reasons. `handle(reconciler, 'added', object)`
// delivers one change of a watched object to the plugin's handler the same way. Both
// answer the plugin's HTTP requests from canned replies (`http: [reply({ status: 200 })]`),
// in the order given, and record every request made (`requests`). The plugin's error,
// thrown as the host would receive it, carries what the call sent and logged before it
// failed (`error.requests`, `error.logs`).

import { AssertionError } from 'node:assert';

import { AdmissionRequest, Denial, Operation, Verdict } from './admission.js';
import { PermanentError, ReconcileError, RetryableError } from './errors.js';
import { Change, deliveryIdOf } from './event.js';
import * as glue from './export.js';
import * as http from './http.js';
import * as log from './log.js';
import { encodeUtf8 } from './utf8.js';
import { ManifestError } from './manifest.js';
import { KubeObject } from './objects.js';
import { Event, EventType, Response } from './response.js';
import { Refusal, validate } from './validate.js';

/** The time a test request carries unless it says otherwise. */
export const NOW = '2026-01-01T00:00:00Z';

/** The host would refuse this plugin's manifest or answer; the message says why. */
export class HostWouldRefuse extends AssertionError {
  constructor(message) {
    super({ message });
    this.name = 'HostWouldRefuse';
  }
}

/**
 * A canned answer to one of the plugin's HTTP requests: the first request whose method
 * and URL match, among those no earlier reply answered. `url` is the URL, where `*`
 * stands for any text (`https://hooks.slack.com/*`; default `*`), `method` any method
 * when absent. The answer is a response (`status`, default 200; `headers`, an object or
 * pairs; `body`, a string, a Uint8Array or any other value sent as JSON), or with
 * `error: { kind, reason }` that reason of the host's for having none (`kind` one of
 * `denied`, `timeout`, `too-large`, `too-many-requests`, `failed`).
 */
export function reply({ status = 200, headers = [], body = '', url = '*', method, error } = {}) {
  if (error !== undefined && !http.ERROR_KINDS.includes(error.kind)) {
    throw new TypeError(`reply: error.kind is one of ${http.ERROR_KINDS.join(', ')}, not ${JSON.stringify(error.kind)}`);
  }
  return { status, headers, body, url, method, error };
}

function matches(r, request) {
  if (r.method !== undefined && r.method.toUpperCase() !== request.method.toUpperCase()) return false;
  const pattern = r.url.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${pattern}$`, 's').test(request.url);
}

function answer(r) {
  if (r.error !== undefined) {
    const error = new Error(`HTTP request ${r.error.kind}: ${r.error.reason}`);
    error.payload = { tag: r.error.kind, val: String(r.error.reason) };
    throw error;
  }
  const body = typeof r.body === 'string' ? encodeUtf8(r.body) : r.body instanceof Uint8Array ? r.body : encodeUtf8(JSON.stringify(r.body));
  const headers = Array.isArray(r.headers) ? r.headers : Object.entries(r.headers);
  return { status: r.status, headers: headers.map(([k, v]) => [String(k).toLowerCase(), String(v)]), body };
}

/** Runs `call` with the host's `http.send` answered from `replies`: each request
 * recorded, answered by the first unused reply that matches it, or denied. */
function withReplies(replies, call) {
  const unused = [...replies];
  const requests = [];
  const previous = http.useTransport((request) => {
    requests.push(new http.HttpRequest(request));
    const i = unused.findIndex((r) => matches(r, request));
    if (i < 0) {
      const message = `${request.method} ${request.url}: no canned reply for this request`;
      const error = new Error(`denied: ${message}`);
      error.payload = { tag: 'denied', val: message };
      throw error;
    }
    return answer(unused.splice(i, 1)[0]);
  });
  try {
    return { result: call(), requests };
  } catch (e) {
    if (e instanceof ReconcileError) e.requests = requests;
    throw e;
  } finally {
    http.useTransport(previous);
  }
}

/** Calls the export `call`; what the plugin logged is kept, and its error record becomes
 * the SDK's error (a `ReconcileError`, or a `Denial` from `default`), as the host would
 * receive it, with those lines (`logs`). */
function calling(call) {
  log.takeCaptured();
  try {
    return { value: call(), logs: log.takeCaptured() };
  } catch (e) {
    const logs = log.takeCaptured();
    if (e !== null && typeof e === 'object' && !(e instanceof Error) && Array.isArray(e.causes)) {
      // The contract's `denial` record, from `default`.
      const denial = denialFromWit(e);
      denial.logs = logs;
      throw denial;
    }
    if (e !== null && typeof e === 'object' && !(e instanceof Error) && typeof e.message === 'string') {
      const error = e.retryable ? new RetryableError(e.message) : new PermanentError(e.message);
      error.logs = logs;
      throw error;
    }
    throw e;
  }
}

/** What the plugin answered, decoded from the wire form and checked. */
export class Outcome {
  constructor(fields) {
    Object.assign(this, fields);
  }

  childrenOf(kind) {
    return this.children.filter((c) => kind.matches(c));
  }

  /** The desired child of `kind` named `name`; fails the test when absent. */
  child(kind, name) {
    const found = this.children.find((c) => kind.matches(c) && c.name === name);
    if (found) return found;
    const desired = this.children.map((c) => c.describe()).join(', ') || 'none';
    throw new AssertionError({ message: `no desired ${kind} named ${JSON.stringify(name)} (desired: ${desired})` });
  }

  warnings() {
    return this.events.filter((e) => e.type === EventType.Warning);
  }
}

function implOf(reconciler) {
  const impl = glue.pluginOf(reconciler);
  if (!impl) throw new TypeError('pass the module\'s `reconciler` export, the value `plugin(...)` returned');
  return typeof impl === 'function' ? new impl() : impl;
}

/** The plugin's manifest, through the export glue, checked as the host checks it at
 * load; throws `HostWouldRefuse` when the host would not load the plugin. */
export function describe(reconciler) {
  reconciler.describe();
  const manifest = implOf(reconciler).describe();
  try {
    manifest.check();
  } catch (e) {
    if (e instanceof ManifestError) throw new HostWouldRefuse(`the host would refuse to load this plugin: ${e.message}`);
    throw e;
  }
  return manifest;
}

/** The plugin's related queries for `parent` (also run through the export glue). */
export function related(reconciler, parent) {
  reconciler.related(JSON.stringify(parent));
  const impl = implOf(reconciler);
  return typeof impl.related === 'function' ? [...(impl.related(new KubeObject(parent)) ?? [])] : [];
}

/**
 * Runs one reconcile natively, through the export glue, and checks the answer exactly as
 * the host does before it writes anything.
 *
 * `children` are observed children (the host only sends those the parent controls),
 * `related` what the plugin's queries selected; any other field of the contract's request
 * goes by its name. Throws the plugin's own error as the host would receive it (a
 * `RetryableError` or `PermanentError`, with the call's `requests` and `logs`), and
 * `HostWouldRefuse` when the host would refuse the answer, listing every problem as the
 * host's `ResponseRefused` event does.
 */
export function reconcile(reconciler, parent, { children = [], related = [], finalizing = false, now = NOW, config = null, http: http_ = [], ...fields } = {}) {
  const manifest = describe(reconciler);
  const request = {
    ...fields,
    parent: JSON.stringify(parent),
    children: children.map((c) => JSON.stringify(c)),
    related: related.map((r) => JSON.stringify(r)),
    finalizing,
    now,
    config: JSON.stringify(config),
  };
  const {
    result: { value: answer, logs },
    requests,
  } = withReplies(http_, () => calling(() => reconciler.reconcile(request)));
  const response = new Response({
    children: answer.children.map((c) => JSON.parse(c)),
    status: answer.status === undefined ? undefined : JSON.parse(answer.status),
    labels: Object.fromEntries(answer.labels),
    annotations: Object.fromEntries(answer.annotations),
    requeueAfterMs: answer.requeueAfterMs === undefined ? undefined : Number(answer.requeueAfterMs),
    events: answer.events.map((e) => new Event(e.type === 'normal' ? EventType.Normal : EventType.Warning, e.reason, e.message)),
    finalized: answer.finalized,
    delete: answer.delete,
  });
  let checked;
  try {
    checked = validate(manifest, parent, response, children);
  } catch (e) {
    if (e instanceof Refusal) throw new HostWouldRefuse(`the host would refuse this answer: ${e.message}`);
    throw e;
  }
  // The observed children the answer deletes by uid (validation found each among them).
  const deleted = children.filter((c) => checked.delete.includes(c?.metadata?.uid)).map((c) => new KubeObject(c));
  return new Outcome({ ...checked, children: checked.children.map((c) => new KubeObject(c)), deleted, logs, requests });
}

/**
 * Delivers one change of a watched object to the plugin's handler natively, through the
 * export glue, as the host does, and returns `{ requests, logs }`.
 *
 * `change` is `'added'`, `'updated'` or `'deleted'`; `kind` is the manifest's watch that
 * selects `object` unless given (the host delivers changes of watched kinds only, so an
 * object no watch selects fails the test); `deliveryId` the host's
 * (`<uid>:<resourceVersion>:<change>`) unless given; any other field of the contract's
 * event goes by its name. `http` answers the plugin's HTTP requests (see `reply`). Throws
 * the plugin's own error as the host would receive it, with the call's `requests` and
 * `logs`.
 */
export function handle(reconciler, change, object, { oldObject, kind, initial = false, finalStateUnknown = false, deliveryId, attempt = 1, now = NOW, config = null, http: http_ = [], ...fields } = {}) {
  const manifest = describe(reconciler);
  if (!Object.values(Change).includes(change)) throw new TypeError(`change is 'added', 'updated' or 'deleted', not ${JSON.stringify(change)}`);
  const watched = manifest.watches.map((w) => w.kind);
  const of = kind ?? watched.find((k) => k.matches(object));
  if (of === undefined) {
    const shown = watched.map(String).join(', ') || 'nothing';
    throw new HostWouldRefuse(`the host delivers changes of watched kinds only: the manifest watches ${shown}, not ${object?.apiVersion} ${object?.kind}`);
  }
  const event = {
    ...fields,
    change,
    kind: glue.kindToWit(of),
    object: JSON.stringify(object),
    oldObject: oldObject === undefined ? undefined : JSON.stringify(oldObject),
    initial,
    finalStateUnknown,
    deliveryId: deliveryId ?? deliveryIdOf(object, change),
    attempt,
    now,
    config: JSON.stringify(config),
  };
  const {
    result: { logs },
    requests,
  } = withReplies(http_, () => calling(() => reconciler.handle(event)));
  return { requests, logs };
}

// ---- admission -----------------------------------------------------------------

/** The kind `object` is of among the manifest's admission `rules` for `operation`, or
 * `HostWouldRefuse` naming what they select: the host asks only about those writes. */
function ruleKind(manifest, which, object, operation, kind) {
  const rules = manifest[which];
  if (kind !== undefined) return kind;
  const rule = rules.find((r) => r.kind.matches(object) && r.effectiveOperations.includes(operation));
  if (rule !== undefined) return rule.kind;
  const shown = rules.map((r) => `${r.effectiveOperations.join('/')} of ${r.kind}`).join(', ') || 'nothing';
  throw new HostWouldRefuse(`the host asks about the writes the manifest's ${which} select: ${shown}, not ${operation} of ${object?.apiVersion} ${object?.kind}`);
}

/** The contract's admission request for a write of `object` (the stored `oldObject` for
 * a delete), as the host sends it. */
function admissionRequest(manifest, which, object, { operation, oldObject, kind, userInfo = {}, dryRun = false, options = null, now = NOW, config = null, ...fields }) {
  const op = operation ?? (oldObject === undefined ? Operation.Create : Operation.Update);
  const subject = op === Operation.Delete ? (oldObject ?? object) : object;
  const of = ruleKind(manifest, which, subject, op, kind);
  const meta = subject?.metadata ?? {};
  const request = new AdmissionRequest({
    uid: '',
    name: meta.name ?? '',
    namespace: meta.namespace,
    ...fields,
    kind: of,
    operation: op,
    object: op === Operation.Delete ? undefined : object,
    oldObject: op === Operation.Delete ? subject : oldObject,
    userInfo,
    dryRun,
    options,
    nowRfc3339: now,
    config,
  });
  return glue.admissionRequestToWit(request);
}

/** The denial the plugin answered, as a `Denial`. */
function denialFromWit(d) {
  return d.causes.reduce((denial, c) => denial.field(c.field, c.message, c.reason), new Denial(d.message));
}

/**
 * Runs the plugin's `default` natively, through the export glue, for a write of `object`
 * the manifest's `defaults` select, and returns `{ object, mutation, warnings, logs }`:
 * the object as the API server would store it (the plugin's object, or the written one
 * with its JSON patch applied), and what the plugin answered.
 *
 * `operation` is `Operation.Create` unless an `oldObject` is given (then `Update`); any
 * other field of the contract's request goes by its name. Throws the plugin's `Denial`
 * when it refuses the write, and `HostWouldRefuse` when the manifest's `defaults` do not
 * select this write (the host would not ask) or the patch does not apply.
 */
export function defaulted(exported, object, options = {}) {
  const manifest = describe(exported);
  const request = admissionRequest(manifest, 'defaults', object, options);
  const { value: answer, logs } = calling(() => exported.default(request));
  const m = answer.mutation;
  let stored = structuredClone(object);
  let mutation = { unchanged: true };
  if (m.tag === 'object') {
    stored = JSON.parse(m.val);
    mutation = { object: stored };
  } else if (m.tag === 'patch') {
    const patch = JSON.parse(m.val);
    try {
      stored = applyPatch(stored, patch);
    } catch (e) {
      throw new HostWouldRefuse(`the API server would refuse the defaulting patch: ${e.message}`);
    }
    mutation = { patch };
  }
  return { object: new KubeObject(stored), mutation, warnings: answer.warnings, logs };
}

/**
 * Runs the plugin's `validate` natively, through the export glue, for a write of
 * `object` the manifest's `validates` select, and returns the `Verdict` (`allowed`,
 * `denied`: a `Denial`, `warnings`) with the call's `logs`. Options as for `defaulted`;
 * for `Operation.Delete`, pass the stored object as `object`.
 */
export function validated(exported, object, options = {}) {
  const manifest = describe(exported);
  const request = admissionRequest(manifest, 'validates', object, options);
  const { value: answer, logs } = calling(() => exported.validate(request));
  const verdict = new Verdict(answer.denied === undefined ? undefined : denialFromWit(answer.denied), answer.warnings);
  verdict.logs = logs;
  return verdict;
}

/**
 * Converts `objects` to `desiredApiVersion` (`group/version`) with the plugin's `convert`
 * natively, through the export glue, and returns them as the API server would keep them:
 * checked as it checks a conversion webhook's answer (the desired `apiVersion`, the same
 * kind, name, namespace and UID) and with every field of `metadata` but labels and
 * annotations restored. Throws the plugin's error as a `PermanentError`, and
 * `HostWouldRefuse` when the manifest does not `convert` or the API server would refuse
 * the answer.
 */
export function converted(exported, objects, desiredApiVersion, { now = NOW, config = null } = {}) {
  const manifest = describe(exported);
  if (!manifest.converts) throw new HostWouldRefuse('the host converts only for a plugin whose manifest says it converts');
  const request = { objects: objects.map((o) => JSON.stringify(o)), desiredApiVersion, now, config: JSON.stringify(config) };
  let answer;
  try {
    answer = calling(() => exported.convert(request)).value;
  } catch (e) {
    if (typeof e === 'string') throw new PermanentError(e);
    throw e;
  }
  if (answer.length !== objects.length) {
    throw new HostWouldRefuse(`the API server would refuse the conversion: ${answer.length} objects for ${objects.length}`);
  }
  return answer.map((text, i) => {
    const out = JSON.parse(text);
    const inn = objects[i];
    const problem =
      out.apiVersion !== desiredApiVersion
        ? `invalid apiVersion: expected ${JSON.stringify(desiredApiVersion)}, got ${JSON.stringify(out.apiVersion)}`
        : ['kind', 'name', 'namespace', 'uid']
            .map((f) => [f, f === 'kind' ? inn.kind : inn.metadata?.[f], f === 'kind' ? out.kind : out.metadata?.[f]])
            .filter(([, a, b]) => a !== b)
            .map(([f, a, b]) => `must have the same ${f === 'uid' ? 'UID' : f}: ${a} != ${b}`)[0];
    if (problem !== undefined) throw new HostWouldRefuse(`the API server would refuse converted object #${i}: ${problem}`);
    const metadata = { ...structuredClone(inn.metadata ?? {}) };
    for (const field of ['labels', 'annotations']) {
      if (out.metadata?.[field] === undefined || out.metadata?.[field] === null) delete metadata[field];
      else metadata[field] = out.metadata[field];
    }
    return new KubeObject({ ...out, metadata });
  });
}

/** `document` with the RFC 6902 JSON `patch` applied (a new value); throws naming the
 * operation that does not apply. */
export function applyPatch(document, patch) {
  if (!Array.isArray(patch)) throw new Error('a JSON patch is a list of operations');
  let doc = structuredClone(document);
  patch.forEach((op, i) => {
    const at = (path) => {
      if (typeof path !== 'string' || (path !== '' && !path.startsWith('/'))) throw new Error(`operation #${i}: ${JSON.stringify(path)} is no JSON pointer`);
      return path === '' ? [] : path.slice(1).split('/').map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
    };
    const get = (tokens) => tokens.reduce((v, t) => {
      if (v === null || typeof v !== 'object' || !(Array.isArray(v) ? /^\d+$/.test(t) && Number(t) < v.length : Object.hasOwn(v, t))) {
        throw new Error(`operation #${i} (${op.op} ${op.path}): ${op.from ?? op.path} does not exist`);
      }
      return v[t];
    }, doc);
    const remove = (tokens) => {
      const parent = get(tokens.slice(0, -1));
      const last = tokens.at(-1);
      const value = get(tokens);
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
      return value;
    };
    const add = (tokens, value) => {
      if (tokens.length === 0) {
        doc = value;
        return;
      }
      const parent = get(tokens.slice(0, -1));
      const last = tokens.at(-1);
      if (Array.isArray(parent)) {
        const index = last === '-' ? parent.length : Number(last);
        if (!/^(\d+|-)$/.test(last) || index > parent.length) throw new Error(`operation #${i} (${op.op} ${op.path}): index out of range`);
        parent.splice(index, 0, value);
      } else if (parent !== null && typeof parent === 'object') parent[last] = value;
      else throw new Error(`operation #${i} (${op.op} ${op.path}): the parent is no object or list`);
    };
    const path = at(op.path);
    switch (op.op) {
      case 'add':
        add(path, structuredClone(op.value));
        break;
      case 'remove':
        remove(path);
        break;
      case 'replace':
        get(path);
        if (path.length === 0) doc = structuredClone(op.value);
        else {
          remove(path);
          add(path, structuredClone(op.value));
        }
        break;
      case 'move':
        add(path, remove(at(op.from)));
        break;
      case 'copy':
        add(path, structuredClone(get(at(op.from))));
        break;
      case 'test':
        if (JSON.stringify(get(path)) !== JSON.stringify(op.value)) throw new Error(`operation #${i}: test of ${op.path} failed`);
        break;
      default:
        throw new Error(`operation #${i}: ${JSON.stringify(op.op)} is none of add, remove, replace, move, copy, test`);
    }
  });
  return doc;
}
