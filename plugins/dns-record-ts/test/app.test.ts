// The operator as the host runs it: each reconcile's requests to the DNS API answered
// from canned replies and recorded.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { PermanentError, RetryableError } from '@kubewasm/sdk';
import * as testing from '@kubewasm/sdk/testing';

import { dnsRecords } from '../app.ts';

const API = 'http://127.0.0.1:18081';
const URL = `${API}/zones/example.org/records/www/A`;
const config = { endpoint: `${API}/`, token: 's3cret' };
const NOW = '2026-03-04T05:06:07Z';

const record = (status?: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'dns.kubewasm.io/v1alpha1',
  kind: 'DnsRecord',
  metadata: { name: 'www', namespace: 'default', uid: 'u-1', generation: 2, ...metadata },
  spec: { zone: 'example.org', name: 'www', type: 'A', ttl: 60, values: ['192.0.2.1'] },
  ...(status ? { status } : {}),
});

const stored = (owner = 'u-1', values = ['192.0.2.1']) => ({ ttl: 60, values, owner });
const run = (parent: object, http: ReturnType<typeof testing.reply>[], options = {}) =>
  testing.reconcile(dnsRecords, parent, { config, now: NOW, http, ...options });

test('a record the API lacks is created, once, and the status says so', () => {
  const out = run(record(), [
    testing.reply({ method: 'GET', url: URL, status: 404 }),
    testing.reply({ method: 'PUT', url: URL, status: 201, headers: { etag: '"1"' } }),
  ]);
  assert.deepEqual(
    out.requests.map((r) => [r.method, r.url]),
    [
      ['GET', URL],
      ['PUT', URL],
    ],
  );
  const put = out.requests[1];
  assert.equal(put.header('authorization'), 'Bearer s3cret');
  assert.equal(put.header('if-match'), undefined);
  assert.deepEqual(put.json(), stored());
  assert.deepEqual(out.status, {
    observedGeneration: 2,
    fqdn: 'www.example.org.',
    remoteVersion: '"1"',
    conditions: [{ type: 'Synced', status: 'True', reason: 'RecordSynced', message: 'www.example.org. holds 192.0.2.1', lastTransitionTime: NOW }],
  });
  assert.deepEqual(out.events.map((e) => [e.type, e.reason]), [['Normal', 'RecordCreated']]);
  assert.equal(out.requeueAfterMs, 300_000);
});

test('a converged record costs one GET, and keeps the time of its condition', () => {
  const before = { type: 'Synced', status: 'True', reason: 'RecordSynced', message: 'old', lastTransitionTime: '2026-01-01T00:00:00Z' };
  const out = run(record({ conditions: [before] }), [testing.reply({ method: 'GET', status: 200, headers: { etag: '"7"' }, body: stored() })]);
  assert.equal(out.requests.length, 1);
  assert.equal(out.events.length, 0);
  assert.equal(out.status?.remoteVersion, '"7"');
  assert.equal(out.status?.conditions[0].lastTransitionTime, '2026-01-01T00:00:00Z');
});

test('a record edited in the API is written back with If-Match', () => {
  const out = run(record(), [
    testing.reply({ method: 'GET', status: 200, headers: { etag: '"7"' }, body: stored('u-1', ['198.51.100.9']) }),
    testing.reply({ method: 'PUT', status: 200, headers: { etag: '"8"' } }),
  ]);
  assert.equal(out.requests[1].header('if-match'), '"7"');
  assert.deepEqual(out.requests[1].json(), stored());
  assert.deepEqual(out.events.map((e) => e.reason), ['RecordUpdated']);
  assert.equal(out.status?.remoteVersion, '"8"');
});

test("a record another owner wrote is left alone, with a Warning", () => {
  const out = run(record(), [testing.reply({ method: 'GET', status: 200, body: stored('someone-else') })]);
  assert.equal(out.requests.length, 1);
  const message = 'www.example.org. is owned by "someone-else", not this DnsRecord; it is left alone';
  assert.deepEqual(out.warnings().map((e) => [e.reason, e.message]), [['RecordConflict', message]]);
  assert.equal(out.status?.conditions[0].reason, 'RecordConflict');
});

test('an API that is down is said in the status once, then retried with backoff', () => {
  const down = testing.reply({ error: { kind: 'failed', reason: 'http://127.0.0.1:18081: connection refused' } });
  const first = run(record(), [down]);
  assert.equal(first.status?.conditions[0].reason, 'RemoteUnavailable');
  assert.equal(first.status?.conditions[0].status, 'False');
  assert.equal(first.requeueAfterMs, 1000);
  assert.deepEqual(first.warnings().map((e) => e.message), ['the DNS API: failed: http://127.0.0.1:18081: connection refused']);
  assert.throws(
    () => run(record(first.status), [testing.reply({ status: 503, body: 'busy' })]),
    (e) => e instanceof RetryableError && e.message === `GET ${URL}: the DNS API answered 503: busy`,
  );
});

test('a refused token or a URL not granted is a permanent error', () => {
  assert.throws(() => run(record(), [testing.reply({ status: 401, body: 'bad token' })]), (e) => e instanceof PermanentError && e.message.endsWith('answered 401: bad token'));
  const denied = testing.reply({ error: { kind: 'denied', reason: 'http://127.0.0.1:18081 is not granted' } });
  assert.throws(() => run(record(), [denied]), (e) => e instanceof PermanentError && e.message === 'the DNS API: denied: http://127.0.0.1:18081 is not granted');
});

test('the finalizer deletes the record, already gone or not, and retries while the API is down', () => {
  for (const status of [204, 404]) {
    const out = run(record(), [testing.reply({ method: 'GET', url: URL, body: stored() }), testing.reply({ method: 'DELETE', url: URL, status })], { finalizing: true });
    assert.ok(out.finalized);
    assert.deepEqual(out.requests.map((r) => [r.method, r.header('authorization')]), [
      ['GET', 'Bearer s3cret'],
      ['DELETE', 'Bearer s3cret'],
    ]);
  }
  const gone = run(record(), [testing.reply({ method: 'GET', status: 404 })], { finalizing: true });
  assert.ok(gone.finalized);
  assert.deepEqual(gone.requests.map((r) => r.method), ['GET']);
  const timeout = testing.reply({ error: { kind: 'timeout', reason: 'no answer' } });
  assert.throws(() => run(record(), [timeout], { finalizing: true }), RetryableError);
  const busy = [testing.reply({ method: 'GET', body: stored() }), testing.reply({ method: 'DELETE', status: 503, body: 'busy' })];
  assert.throws(() => run(record(), busy, { finalizing: true }), (e) => e instanceof RetryableError && e.message === `DELETE ${URL}: the DNS API answered 503: busy`);
});

test("the finalizer leaves a record another owner holds", () => {
  const out = run(record(), [testing.reply({ method: 'GET', body: stored('someone-else') })], { finalizing: true });
  assert.ok(out.finalized);
  assert.deepEqual(out.requests.map((r) => r.method), ['GET']);
});

test('each part of the name is one segment of the URL', () => {
  const odd = { ...record(), spec: { zone: 'example.org', name: '../../admin?x=1', type: 'TXT', values: ['v'] } };
  const out = run(odd, [testing.reply({ method: 'GET', status: 404 }), testing.reply({ method: 'PUT', status: 201 })]);
  assert.equal(out.requests[0].url, `${API}/zones/example.org/records/..%2F..%2Fadmin%3Fx%3D1/TXT`);
  const up = { ...record(), spec: { zone: 'example.org', name: '..', type: 'A', values: ['192.0.2.1'] } };
  assert.throws(() => run(up, []), (e) => e instanceof PermanentError && e.message === 'DnsRecord default/www: spec.name: ".." is not a DNS name');
  const deleted = run(up, [], { finalizing: true });
  assert.ok(deleted.finalized, 'a DnsRecord that never named a record is not kept from going');
  assert.equal(deleted.requests.length, 0);
});

test('a spec without values is a permanent error naming the field', () => {
  const bad = { ...record(), spec: { zone: 'example.org', name: 'www', type: 'A' } };
  assert.throws(() => run(bad, []), { message: 'DnsRecord default/www: spec.values: missing field' });
});
