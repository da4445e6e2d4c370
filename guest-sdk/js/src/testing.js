// Native tests of a plugin under `node --test`: no WebAssembly, no host.
//
// `reconcile(reconciler, parent, { children })` encodes the request as the host does,
// runs the same export glue as the component with the same WIT records, decodes the
// answer and checks it with a port of the host's own validation: an answer the host would
// refuse fails the test with the host's reasons.

import { AssertionError } from 'node:assert';

import { PermanentError, RetryableError } from './errors.js';
import * as glue from './export.js';
import * as log from './log.js';
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
 * goes by its name. Throws the plugin's own error as the host
 * would receive it (a `RetryableError` or `PermanentError`), and `HostWouldRefuse` when
 * the host would refuse the answer, listing every problem as the host's `ResponseRefused`
 * event does.
 */
export function reconcile(reconciler, parent, { children = [], related = [], finalizing = false, now = NOW, config = null, ...fields } = {}) {
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
  log.takeCaptured();
  let answer;
  let logs;
  try {
    answer = reconciler.reconcile(request);
  } catch (e) {
    if (e !== null && typeof e === 'object' && !(e instanceof Error) && typeof e.message === 'string') {
      throw e.retryable ? new RetryableError(e.message) : new PermanentError(e.message);
    }
    throw e;
  } finally {
    logs = log.takeCaptured();
  }
  const response = new Response({
    children: answer.children.map((c) => JSON.parse(c)),
    status: answer.status === undefined ? undefined : JSON.parse(answer.status),
    labels: Object.fromEntries(answer.labels),
    annotations: Object.fromEntries(answer.annotations),
    requeueAfterMs: answer.requeueAfterMs === undefined ? undefined : Number(answer.requeueAfterMs),
    events: answer.events.map((e) => new Event(e.type === 'normal' ? EventType.Normal : EventType.Warning, e.reason, e.message)),
    finalized: answer.finalized,
  });
  let checked;
  try {
    checked = validate(manifest, parent, response);
  } catch (e) {
    if (e instanceof Refusal) throw new HostWouldRefuse(`the host would refuse this answer: ${e.message}`);
    throw e;
  }
  return new Outcome({ ...checked, children: checked.children.map((c) => new KubeObject(c)), logs });
}
