// Admission and conversion: writes and objects handed to a plugin's default, validate and
// convert through the export glue, as the host sends them, and the answers as the API
// server would take them.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AdmissionRequest,
  AdmissionRule,
  Defaulted,
  Denial,
  KindRef,
  Manifest,
  Operation,
  PermanentError,
  Response,
  Verdict,
  kinds,
  plugin,
} from '@kubewasm/sdk';
import * as testing from '@kubewasm/sdk/testing';

const WIDGET = new KindRef('x.io', 'v1', 'Widget', 'widgets');
const WIDGET_V2 = new KindRef('x.io', 'v2', 'Widget', 'widgets');
const widget = (spec = {}, name = 'w') => ({ apiVersion: 'x.io/v1', kind: 'Widget', metadata: { name, namespace: 'shop', uid: 'u-1' }, spec });

const seen = [];
const widgets = plugin({
  describe: () =>
    new Manifest('widgets', WIDGET, {
      crds: ['kind: CustomResourceDefinition'],
      defaults: [new AdmissionRule(WIDGET)],
      validates: [new AdmissionRule(WIDGET, [Operation.Create, Operation.Update, Operation.Delete])],
      converts: true,
    }),
  reconcile: () => new Response(),
  default(request) {
    seen.push(request);
    const spec = request.object.spec;
    if (spec.mode === 'patch') return Defaulted.patch([{ op: 'add', path: '/spec/size', value: 3 }]).warning('size defaulted');
    if (spec.mode === 'whole') return Defaulted.object({ ...request.object, spec: { size: 5 } });
    if (spec.mode === 'refuse') throw Denial.invalid('spec.mode', 'must not be refuse');
    if (spec.mode === 'field') request.object.field('spec.missing', 'string');
    spec.size ??= 1;
    return undefined;
  },
  validate(request) {
    seen.push(request);
    if (request.operation === Operation.Delete) throw new Denial('widgets are forever');
    const { size } = request.object.spec;
    if (size > 10) throw Denial.invalid('spec.size', 'must be at most 10').field('spec.mode', 'Required value', 'FieldValueRequired');
    return size > 5 ? Verdict.allow().warning('a big widget') : undefined;
  },
  convert(object, desired) {
    if (object.spec.broken) throw new PermanentError('spec.broken cannot be converted');
    const [, version] = desired.split('/');
    const labels = { ...object.labels, converted: version };
    return { ...object, apiVersion: desired, metadata: { ...object.metadata, labels, generation: 99 }, spec: { ...object.spec, version } };
  },
});

test('the manifest carries the admission rules, kept kinds and conversion through the record', () => {
  const jobs = kinds.Job;
  const m = new Manifest('c', WIDGET, { children: [jobs], keepUnlisted: [jobs], validates: [new AdmissionRule(jobs, [Operation.Delete, Operation.Connect])] });
  const wire = plugin({ describe: () => m, reconcile: () => new Response() }).describe();
  assert.deepEqual(wire.keepUnlisted.map((k) => k.kind), ['Job']);
  assert.deepEqual(wire.validates.map((r) => [r.kind.kind, r.operations]), [['Job', ['delete', 'connect']]]);
  assert.deepEqual(wire.defaults, []);
  assert.equal(wire.converts, false);
  const bad = plugin({ describe: () => new Manifest('c', WIDGET, { defaults: [new AdmissionRule(WIDGET, ['create'])] }), reconcile: () => new Response() });
  assert.throws(() => bad.describe(), { message: 'defaults[0].operations: "create" is none of CREATE, UPDATE, DELETE, CONNECT' });
});

test('the request reaches default typed, with every field the host sent', () => {
  seen.length = 0;
  testing.defaulted(widgets, widget({ size: 2 }), {
    userInfo: { username: 'alice', groups: ['dev'], extra: { scopes: ['a', 'b'] } },
    dryRun: true,
    options: { fieldManager: 'kubectl' },
    uid: 'review-1',
    subResource: 'status',
    now: '2026-03-04T05:06:07Z',
    config: { strict: true },
  });
  const [request] = seen;
  assert.ok(request instanceof AdmissionRequest);
  assert.equal(request.operation, Operation.Create);
  assert.deepEqual(request.kind, WIDGET);
  assert.deepEqual([request.name, request.namespace, request.uid, request.subResource], ['w', 'shop', 'review-1', 'status']);
  assert.deepEqual(request.userInfo, { username: 'alice', uid: '', groups: ['dev'], extra: { scopes: ['a', 'b'] } });
  assert.equal(request.dryRun, true);
  assert.deepEqual(request.options, { fieldManager: 'kubectl' });
  assert.deepEqual(request.config, { strict: true });
  assert.equal(request.now.toISOString(), '2026-03-04T05:06:07.000Z');
  assert.equal(request.oldObject, undefined);
});

test('default may change the object in place, return a whole object or a patch, or refuse', () => {
  const inPlace = testing.defaulted(widgets, widget({}));
  assert.equal(inPlace.object.spec.size, 1);
  assert.equal(inPlace.mutation.object.spec.size, 1);
  assert.deepEqual(testing.defaulted(widgets, widget({ size: 2 })).mutation, { unchanged: true });

  const patched = testing.defaulted(widgets, widget({ mode: 'patch' }));
  assert.deepEqual(patched.object.spec, { mode: 'patch', size: 3 });
  assert.deepEqual(patched.warnings, ['size defaulted']);
  assert.deepEqual(testing.defaulted(widgets, widget({ mode: 'whole' })).object.spec, { size: 5 });

  assert.throws(() => testing.defaulted(widgets, widget({ mode: 'refuse' })), (e) => {
    assert.ok(e instanceof Denial);
    assert.equal(e.message, 'spec.mode: must not be refuse');
    assert.deepEqual(e.causes, [{ field: 'spec.mode', message: 'must not be refuse', reason: 'FieldValueInvalid' }]);
    return true;
  });
  // A field the plugin reads and does not find refuses the write, with the field named.
  assert.throws(() => testing.defaulted(widgets, widget({ mode: 'field' })), { name: 'Denial', message: /spec\.missing/ });
});

test('the host asks only about the writes the rules select', () => {
  assert.throws(() => testing.defaulted(widgets, widget({}), { operation: Operation.Delete, oldObject: widget({}) }), {
    name: 'HostWouldRefuse',
    message: "the host asks about the writes the manifest's defaults select: CREATE/UPDATE of x.io/v1 Widget, not DELETE of x.io/v1 Widget",
  });
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } };
  assert.throws(() => testing.validated(widgets, pod), { name: 'HostWouldRefuse' });
});

test('validate allows, warns, or denies with field causes', () => {
  assert.ok(testing.validated(widgets, widget({ size: 1 })).allowed);
  const big = testing.validated(widgets, widget({ size: 6 }), { oldObject: widget({ size: 1 }) });
  assert.ok(big.allowed);
  assert.deepEqual(big.warnings, ['a big widget']);
  const denied = testing.validated(widgets, widget({ size: 11 }));
  assert.equal(denied.allowed, false);
  assert.equal(denied.denied.message, 'spec.size: must be at most 10, spec.mode: Required value');
  assert.deepEqual(denied.denied.causes.map((c) => c.reason), ['FieldValueInvalid', 'FieldValueRequired']);
  seen.length = 0;
  const deleted = testing.validated(widgets, widget({ size: 1 }), { operation: Operation.Delete });
  assert.equal(deleted.denied.message, 'widgets are forever');
  assert.equal(seen[0].object, undefined);
  assert.equal(seen[0].oldObject.name, 'w');
});

test('a plugin without admission changes nothing, allows everything and converts nothing', () => {
  const plain = plugin({ describe: () => new Manifest('plain', WIDGET), reconcile: () => new Response() });
  const request = {
    uid: '',
    kind: { group: 'x.io', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true },
    operation: 'create',
    name: 'w',
    object: JSON.stringify(widget()),
    userInfo: { username: '', uid: '', groups: [], extra: [] },
    dryRun: false,
    options: 'null',
    now: testing.NOW,
    config: 'null',
  };
  assert.deepEqual(plain.default(request), { mutation: { tag: 'unchanged' }, warnings: [] });
  assert.deepEqual(plain.validate(request), { denied: undefined, warnings: [] });
  assert.throws(
    () => plain.convert({ objects: [JSON.stringify(widget())], desiredApiVersion: 'x.io/v2', now: testing.NOW, config: 'null' }),
    (e) => e === 'object #0 (Widget "w"): this plugin converts no objects, and was asked to convert a Widget',
  );
  // An object that is not JSON is refused, never let through unexamined.
  assert.deepEqual(plain.validate({ ...request, object: '{' }).denied.message.startsWith('object is not JSON'), true);
});

test('convert answers each object in the desired version, and the API server keeps its metadata', () => {
  const [v2] = testing.converted(widgets, [{ ...widget({ size: 2 }), metadata: { ...widget().metadata, labels: { a: '1' }, generation: 4 } }], WIDGET_V2.apiVersion);
  assert.equal(v2.apiVersion, 'x.io/v2');
  assert.deepEqual(v2.spec, { size: 2, version: 'v2' });
  assert.deepEqual(v2.labels, { a: '1', converted: 'v2' });
  // Only labels and annotations of metadata may change; the rest is restored.
  assert.equal(v2.generation, 4);
  assert.throws(() => testing.converted(widgets, [widget({ broken: true })], 'x.io/v2'), {
    name: 'PermanentError',
    message: 'object #0 (Widget "w"): spec.broken cannot be converted',
  });
  const renaming = plugin({
    describe: () => new Manifest('r', WIDGET, { crds: ['crd'], converts: true }),
    reconcile: () => new Response(),
    convert: (object, desired) => ({ ...object, apiVersion: desired, metadata: { name: 'other' } }),
  });
  assert.throws(() => testing.converted(renaming, [widget()], 'x.io/v2'), {
    name: 'HostWouldRefuse',
    message: 'the API server would refuse converted object #0: must have the same name: w != other',
  });
});

test('a JSON patch applies as RFC 6902 says, and one that does not apply is named', () => {
  const doc = { a: { b: [1, 2] }, 'x/y': 1 };
  const out = testing.applyPatch(doc, [
    { op: 'add', path: '/a/b/1', value: 9 },
    { op: 'add', path: '/a/b/-', value: 3 },
    { op: 'replace', path: '/x~1y', value: 2 },
    { op: 'copy', from: '/a/b', path: '/c' },
    { op: 'move', from: '/c', path: '/d' },
    { op: 'remove', path: '/a/b/0' },
    { op: 'test', path: '/d/1', value: 9 },
  ]);
  assert.deepEqual(out, { a: { b: [9, 2, 3] }, 'x/y': 2, d: [1, 9, 2, 3] });
  assert.deepEqual(doc, { a: { b: [1, 2] }, 'x/y': 1 });
  assert.throws(() => testing.applyPatch(doc, [{ op: 'replace', path: '/nope', value: 1 }]), { message: 'operation #0 (replace /nope): /nope does not exist' });
});
