// The native harness: the export glue, the plugin's errors as the host receives them,
// answers the host would refuse, logs, and the object accessors plugins read with.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Event, KindRef, KubeObject, Manifest, PermanentError, Query, Response, RetryableError, kinds, log, plugin } from '@kubewasm/sdk';
import * as testing from '@kubewasm/sdk/testing';

const PARENT = { apiVersion: 'example.com/v1', kind: 'Echo', metadata: { name: 'hi', namespace: 'team', uid: 'u-1', labels: { tier: 'web' } }, spec: { say: 'hello' } };

const echo = plugin({
  describe: () => new Manifest('echo', new KindRef('example.com', 'v1', 'Echo', 'echoes'), { children: [kinds.ConfigMap], related: [kinds.Secret] }),
  related: (parent) => [Query.named(kinds.Secret, parent.namespace, ['creds'])],
  reconcile(request) {
    const parent = request.parent;
    const mode = parent.field('spec.mode', 'string', 'ok');
    log.info('echoing', { mode });
    if (mode === 'retry') throw new RetryableError('later');
    if (mode === 'stray') return new Response().child({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'elsewhere' } });
    if (mode === 'bug') return parent.spec.missing.field;
    if (mode === 'string') throw 'not an Error';
    if (mode === 'record') throw { message: 'looks like a reconcile-error', retryable: true };
    if (mode === 'delete') return request.children.reduce((r, c) => r.deleteChild(c), new Response());
    const said = parent.field('spec.say', 'string');
    return new Response({ status: { said: true }, requeueAfterMs: 1500 })
      .child({ apiVersion: 'v1', kind: 'ConfigMap', metadata: parent.childMeta(parent.name), data: { said } })
      .event(Event.normal('Echoed', said));
  },
});

const withSpec = (spec) => ({ ...PARENT, spec: { ...PARENT.spec, ...spec } });

test('an answer goes through the glue and is checked, namespaces filled in', () => {
  const out = testing.reconcile(echo, PARENT);
  const cm = out.child(kinds.ConfigMap, 'hi');
  assert.deepEqual(cm.metadata, { labels: { tier: 'web' }, name: 'hi', namespace: 'team' });
  assert.deepEqual(cm.data, { said: 'hello' });
  assert.deepEqual(out.status, { said: true });
  assert.equal(out.requeueAfterMs, 1500);
  assert.deepEqual(out.events, [Event.normal('Echoed', 'hello')]);
  assert.deepEqual(out.logs, [{ level: 'info', message: 'echoing', fields: [['mode', 'ok']] }]);
});

test('errors arrive as the host receives them', () => {
  assert.throws(() => testing.reconcile(echo, withSpec({ mode: 'retry' })), (e) => e instanceof RetryableError && e.message === 'later');
  assert.throws(() => testing.reconcile(echo, withSpec({ say: 3 })), (e) => e instanceof PermanentError && e.message === 'Echo team/hi: spec.say: expected a string, found an integer');
  assert.throws(() => testing.reconcile(echo, { ...PARENT, spec: {} }), { message: 'Echo team/hi: spec.say: missing field' });
  // Any other exception is a bug: it propagates (in the component, the call traps).
  assert.throws(() => testing.reconcile(echo, withSpec({ mode: 'bug' })), TypeError);
  // A thrown value that is not an Error traps too, as an Error saying what was thrown
  // (the engines would take an object for the contract's error record).
  assert.throws(() => testing.reconcile(echo, withSpec({ mode: 'string' })), { message: 'reconcile threw string "not an Error", not an Error' });
  assert.throws(() => testing.reconcile(echo, withSpec({ mode: 'record' })), (e) => !(e instanceof RetryableError) && e.message.startsWith('reconcile threw Object {"message":'));
});

test('an answer the host would refuse fails with the host reasons', () => {
  assert.throws(() => testing.reconcile(echo, withSpec({ mode: 'stray' })), (e) => e instanceof testing.HostWouldRefuse && e.message.includes('is in namespace "elsewhere", outside its parent\'s namespace "team"'));
  const bad = plugin({ describe: () => new Manifest('Bad', kinds.Pod), reconcile: () => new Response() });
  assert.throws(() => testing.describe(bad), /would refuse to load this plugin: name "Bad" must be a DNS label/);
});

test('related queries go through the glue as WIT records', () => {
  assert.deepEqual(echo.related(JSON.stringify(PARENT)), [
    { kind: { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true }, namespace: 'team', selector: { tag: 'names', val: ['creds'] } },
  ]);
  const [query] = testing.related(echo, PARENT);
  assert.ok(query.matches({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: 'team' } }));
  assert.ok(!query.matches({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds', namespace: 'other' } }));
});

test('observed children deleted by uid come back, and an unobserved one is refused', () => {
  const configMap = (name, uid) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team', uid } });
  const out = testing.reconcile(echo, withSpec({ mode: 'delete' }), { children: [configMap('old', 'u-old'), configMap('older', 'u-older')] });
  assert.deepEqual(out.deleted.map((c) => c.name), ['old', 'older']);
  assert.deepEqual(out.children, []);
  assert.throws(
    () => testing.reconcile(echo, withSpec({ mode: 'delete' }), { children: [configMap('x')] }),
    (e) => e instanceof testing.HostWouldRefuse && e.message.includes('delete #0 ("") is not the metadata.uid of an observed child'),
  );
});

test('a kept child loses what the server and the host set, and keeps its uid', () => {
  const observed = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', uid: 'u-9', resourceVersion: '5', annotations: { 'kubewasm.io/applied-hash': 'h' } }, status: {} };
  assert.deepEqual(new Response().keep(new KubeObject(observed)).children, [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', uid: 'u-9' } }]);
});

test('fields are read by path, with fallbacks and errors naming them', () => {
  const o = new KubeObject({ kind: 'App', metadata: { name: 'a' }, spec: { ports: [{ port: 80 }], on: true } });
  assert.equal(o.field('spec.ports[0].port', 'integer'), 80);
  assert.equal(o.field('spec.ports[1].port', 'integer', 8080), 8080);
  assert.equal(o.field('spec.ports[0].nodePort', 'integer', null), null);
  assert.throws(() => o.field('spec.on', 'integer'), { message: 'App a: spec.on: expected an integer, found a boolean' });
  assert.equal(o.describe(), 'App a');
  assert.deepEqual(o.childMetaIn('x', 'ns'), { name: 'x', namespace: 'ns' });
});
