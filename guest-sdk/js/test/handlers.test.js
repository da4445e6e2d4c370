// Event handlers: a change delivered through the export glue as the host sends it, the
// plugin's HTTP requests answered from canned replies and recorded.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Change, KindRef, Manifest, ObjectEvent, PermanentError, Response, RetryableError, Watch, http, kinds, log, plugin } from '@kubewasm/sdk';
import { componentExports } from '../src/export.js';
import * as testing from '@kubewasm/sdk/testing';

const POD = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop', uid: 'u-1', resourceVersion: '42' } };
const HOOK = 'https://hooks.example.com/pods';

const seen = [];
const notify = plugin({
  describe: () => Manifest.handler('notify', { watches: [new Watch(kinds.Pod, { labelSelector: 'app=web' }), new Watch(kinds.Node)], outbound: [HOOK] }),
  handle(event) {
    seen.push(event);
    const mode = event.config?.mode ?? 'post';
    if (mode === 'retry') throw new RetryableError('the receiver is down');
    if (mode === 'bug') return event.object.spec.missing;
    if (mode === 'promise') return Promise.resolve();
    log.info('notifying', { change: event.change, attempt: event.attempt });
    const res = http.fetch(HOOK, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pod: event.object.name, id: event.deliveryId }) });
    if (!res.ok) throw (res.status >= 500 ? new RetryableError(`HTTP ${res.status}`) : new PermanentError(`HTTP ${res.status}`));
  },
});

const handle = (change, options) => {
  seen.length = 0;
  return testing.handle(notify, change, POD, options);
};

test('the event reaches the handler typed, and its request is recorded', () => {
  const old = { ...POD, metadata: { ...POD.metadata, resourceVersion: '41' } };
  const out = handle('updated', { oldObject: old, attempt: 2, now: '2026-03-04T05:06:07Z', config: { mode: 'post' }, http: [testing.reply()] });
  const [event] = seen;
  assert.ok(event instanceof ObjectEvent);
  assert.equal(event.change, Change.Updated);
  assert.deepEqual(event.kind, kinds.Pod);
  assert.equal(event.object.name, 'web-0');
  assert.equal(event.oldObject.metadata.resourceVersion, '41');
  assert.deepEqual([event.initial, event.finalStateUnknown, event.attempt, event.deliveryId], [false, false, 2, 'u-1:42:updated']);
  assert.equal(event.now.toISOString(), '2026-03-04T05:06:07.000Z');
  assert.deepEqual(event.config, { mode: 'post' });
  const [request] = out.requests;
  assert.deepEqual([request.method, request.url, request.header('Content-Type')], ['POST', HOOK, 'application/json']);
  assert.deepEqual(request.json(), { pod: 'web-0', id: 'u-1:42:updated' });
  assert.deepEqual(out.logs, [{ level: 'info', message: 'notifying', fields: [['change', 'updated'], ['attempt', '2']] }]);
});

test('every field of the event survives the record', () => {
  handle('deleted', { initial: true, finalStateUnknown: true, deliveryId: 'd-1', http: [testing.reply()] });
  const [event] = seen;
  assert.deepEqual([event.change, event.initial, event.finalStateUnknown, event.deliveryId, event.oldObject], ['deleted', true, true, 'd-1', undefined]);
});

test('errors arrive as the host receives them', () => {
  assert.throws(() => handle('added', { config: { mode: 'retry' } }), (e) => e instanceof RetryableError && e.message === 'the receiver is down');
  assert.throws(() => handle('added', { http: [testing.reply({ status: 503 })] }), (e) => e instanceof RetryableError && e.message === 'HTTP 503');
  assert.throws(() => handle('added', { config: { mode: 'bug' } }), TypeError);
  assert.throws(() => handle('added', { config: { mode: 'promise' } }), { message: 'handle returned a Promise: make it synchronous (http.fetch returns the response itself)' });
});

test('a request no reply answers is denied; the host reasons reach the plugin', () => {
  assert.throws(
    () => handle('added', { http: [testing.reply({ url: 'https://elsewhere.example.com/*' })] }),
    (e) => e instanceof PermanentError && e.message === `HTTP request denied: POST ${HOOK}: no canned reply for this request`,
  );
  const reason = 'https://hooks.example.com:443: no response within 10s';
  assert.throws(
    () => handle('added', { http: [testing.reply({ error: { kind: 'timeout', reason } })] }),
    (e) => e instanceof RetryableError && e.message === `HTTP request timeout: ${reason}`,
  );
});

/** What `call` threw. */
const thrown = (call) => {
  try {
    call();
  } catch (e) {
    return e;
  }
  assert.fail('expected the call to throw');
};

test("a failed call's error carries what the call sent and logged before it failed", () => {
  const down = thrown(() => handle('added', { http: [testing.reply({ status: 503 })] }));
  assert.ok(down instanceof RetryableError);
  assert.deepEqual(down.requests.map((r) => [r.method, r.url, r.json().pod]), [['POST', HOOK, 'web-0']]);
  assert.deepEqual(down.logs.map((l) => [l.level, l.message]), [['info', 'notifying']]);
  const fetching = plugin({
    describe: () => new Manifest('fetching', new KindRef('x.io', 'v1', 'X', 'xs'), { outbound: [HOOK] }),
    reconcile() {
      log.warn('fetching');
      http.fetch(HOOK);
      throw new PermanentError('refused');
    },
  });
  const parent = { apiVersion: 'x.io/v1', kind: 'X', metadata: { name: 'x', namespace: 'd', uid: 'u' } };
  const refused = thrown(() => testing.reconcile(fetching, parent, { http: [testing.reply()] }));
  assert.ok(refused instanceof PermanentError);
  assert.deepEqual(refused.requests.map((r) => [r.method, r.url]), [['GET', HOOK]]);
  assert.deepEqual(refused.logs.map((l) => l.message), ['fetching']);
});

test('a kind no watch selects is never delivered', () => {
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } };
  assert.throws(() => testing.handle(notify, 'added', deployment), {
    name: 'HostWouldRefuse',
    message: 'the host delivers changes of watched kinds only: the manifest watches v1 Pod, v1 Node, not apps/v1 Deployment',
  });
});

test('the manifest carries watches and outbound through the record', () => {
  const wire = notify.describe();
  assert.equal(wire.parent, undefined);
  assert.deepEqual(wire.watches.map((w) => [w.kind.kind, w.labelSelector, w.fieldSelector]), [['Pod', 'app=web', undefined], ['Node', undefined, undefined]]);
  assert.deepEqual(wire.outbound, [HOOK]);
});

test('a plugin is called only for what it implements', () => {
  assert.throws(() => notify.reconcile({}), { message: 'this plugin reconciles nothing: its manifest names no parent', retryable: false });
  assert.deepEqual(notify.related('{}'), []);
  const reconciles = plugin({ describe: () => new Manifest('r', new KindRef('x.io', 'v1', 'X', 'xs')), reconcile: () => new Response() });
  assert.throws(() => reconciles.handle({}), { message: 'this plugin handles no events: its manifest declares no watches', retryable: false });
  assert.throws(() => plugin({ describe: () => null }), { message: 'a kubewasm plugin needs a method `reconcile`, `handle`, `default`, `validate` or `convert`' });
});

test("the build exports the contract's interfaces of the module's one plugin", () => {
  const exports = componentExports({ notify, other: 3 });
  assert.equal(exports.handler.handle, notify.handle);
  assert.equal(exports.pluginInfo.describe, notify.describe);
  assert.throws(() => componentExports({ a: notify, b: notify }), /must export one value of plugin\(\.\.\.\)/);
  assert.throws(() => componentExports({}), /it exports 0 \(exports: none\)/);
});
