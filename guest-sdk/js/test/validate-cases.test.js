// The host's checks, ported to JavaScript, against the table of cases the Rust contract
// crate is tested with (wit/contract/tests/validate_cases.json).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { AdmissionRule, Event, KindRef, Manifest, ManifestError, Refusal, Response, Watch, validate } from '@kubewasm/sdk';

const CASES = new URL('../../../wit/contract/tests/validate_cases.json', import.meta.url);

/** Replaces each `{"$repeat": [[text, n], ...]}` with the string it stands for. */
function expand(value) {
  if (Array.isArray(value)) return value.map(expand);
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === '$repeat') return value.$repeat.map(([text, n]) => text.repeat(n)).join('');
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
  }
  return value;
}

const TABLE = expand(JSON.parse(readFileSync(CASES, 'utf8')));

const kind = (v) => new KindRef(v.group, v.version, v.kind, v.plural, v.namespaced);

function manifest(v) {
  return new Manifest(v.name, v.parent && kind(v.parent), {
    children: (v.children ?? []).map(kind),
    related: (v.related ?? []).map(kind),
    finalizer: v.finalizer ?? false,
    limits: { deadlineMs: v.limits?.deadlineMs, memoryMib: v.limits?.memoryMib },
    watches: (v.watches ?? []).map((w) => new Watch(kind(w.kind), { labelSelector: w.labelSelector, fieldSelector: w.fieldSelector })),
    outbound: v.outbound ?? [],
    crds: v.crds ?? [],
    keepUnlisted: (v.keepUnlisted ?? []).map(kind),
    defaults: (v.defaults ?? []).map(rule),
    validates: (v.validates ?? []).map(rule),
    converts: v.converts ?? false,
  });
}

const rule = (r) => new AdmissionRule(kind(r.kind), r.operations ?? []);

function response(v) {
  return new Response({
    children: v.children ?? [],
    status: v.status,
    labels: v.labels ?? {},
    annotations: v.annotations ?? {},
    requeueAfterMs: v.requeueAfterMs,
    events: (v.events ?? []).map((e) => new Event(e.type, e.reason, e.message)),
    finalized: v.finalized ?? false,
    delete: v.delete ?? [],
  });
}

/** The wire form of a response, as the cases write it: only what is set. */
function wire(r) {
  const out = {};
  if (r.children.length) out.children = r.children;
  if (r.status !== undefined) out.status = r.status;
  if (Object.keys(r.labels).length) out.labels = r.labels;
  if (Object.keys(r.annotations).length) out.annotations = r.annotations;
  if (r.events.length) out.events = r.events.map((e) => ({ type: e.type, reason: e.reason, message: e.message }));
  if (r.requeueAfterMs !== undefined) out.requeueAfterMs = r.requeueAfterMs;
  if (r.finalized) out.finalized = true;
  if (r.delete.length) out.delete = r.delete;
  return out;
}

test('the table has cases', () => {
  assert.ok(TABLE.manifests.length > 5 && TABLE.responses.length > 20);
});

for (const c of TABLE.manifests) {
  test(`manifest: ${c.name}`, () => {
    let error = null;
    try {
      manifest(c.manifest).check();
    } catch (e) {
      assert.ok(e instanceof ManifestError, `${e}`);
      error = e.message;
    }
    assert.equal(error, c.error);
  });
}

for (const c of TABLE.responses) {
  test(`response: ${c.name}`, () => {
    const m = manifest(c.manifest ?? TABLE.defaults.manifest);
    const parent = c.parent ?? TABLE.defaults.parent;
    const observed = c.observed ?? [];
    const given = response(c.response);
    if ('accepted' in c) {
      assert.deepEqual(wire(validate(m, parent, given, observed)), c.accepted);
    } else {
      assert.throws(
        () => validate(m, parent, given, observed),
        (e) => {
          assert.ok(e instanceof Refusal, `${e}`);
          assert.deepEqual(e.problems, c.problems);
          assert.equal(e.plugin, m.name);
          return true;
        },
      );
    }
  });
}
