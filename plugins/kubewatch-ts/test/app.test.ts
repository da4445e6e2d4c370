// The plugin as the host runs it: changes delivered to `handle`, its requests answered
// from canned replies and recorded.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { PermanentError, RetryableError, kinds } from '@kubewasm/sdk';
import * as testing from '@kubewasm/sdk/testing';

import { kubewatch } from '../app.ts';

const pod = (namespace = 'default') => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'nginx', namespace, uid: 'u-1', resourceVersion: '42' },
  spec: { containers: [{ name: 'nginx', image: 'nginx' }] },
});

const WEBHOOK = 'http://receiver.test/hook';
const config = (handler: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ handler, resource: { pod: true, namespace: true, secret: true }, ...extra });
const ok = (url = '*') => testing.reply({ url, status: 200 });

test('each change of a kind turned on is notified, with the webhook payload', () => {
  const out = testing.handle(kubewatch, 'added', pod(), { config: config({ webhook: { url: WEBHOOK } }), now: '2026-01-02T03:04:05Z', http: [ok()] });
  assert.equal(out.requests.length, 1);
  const [request] = out.requests;
  assert.deepEqual([request.method, request.url, request.header('content-type')], ['POST', WEBHOOK, 'application/json']);
  assert.equal(
    request.text(),
    '{"eventmeta":{"kind":"Pod","name":"nginx","namespace":"default","reason":"Created"},"text":"A `Pod` in namespace `default` has been `Created`:\\n`nginx`","time":"2026-01-02T03:04:05Z"}',
  );
});

test('kinds not turned on, and objects outside the namespace, are not notified', () => {
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default', uid: 'u-2' } };
  assert.equal(testing.handle(kubewatch, 'added', deployment, { config: config({ webhook: { url: WEBHOOK } }) }).requests.length, 0);
  const only = config({ webhook: { url: WEBHOOK } }, { namespace: 'prod' });
  assert.equal(testing.handle(kubewatch, 'updated', pod('default'), { oldObject: pod('default'), config: only }).requests.length, 0);
  assert.equal(testing.handle(kubewatch, 'updated', pod('prod'), { oldObject: pod('prod'), config: only, http: [ok()] }).requests.length, 1);
  // A cluster-scoped kind has no namespace to filter on.
  const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', uid: 'u-3', resourceVersion: '7' } };
  const out = testing.handle(kubewatch, 'deleted', ns, { config: only, http: [ok()] });
  assert.equal(out.requests[0].json().text, 'A `Namespace` in namespace `` has been `Deleted`:\n`team-a`');
});

test('every handler configured is notified, each in its own format', () => {
  const handlers = {
    webhook: { url: WEBHOOK },
    slackwebhook: { slackwebhookurl: 'https://hooks.slack.test/services/T/B/X', channel: '#alerts' },
    msteams: { webhookurl: 'https://teams.test/w' },
    cloudevent: { url: 'http://events.test/' },
  };
  const out = testing.handle(kubewatch, 'updated', pod(), { oldObject: pod(), config: config(handlers), http: [ok(), ok(), ok(), ok()] });
  assert.deepEqual(
    out.requests.map((r) => r.url),
    [WEBHOOK, 'https://hooks.slack.test/services/T/B/X', 'https://teams.test/w', 'http://events.test/'],
  );
  const [hook, slack, teams, ce] = out.requests;
  assert.equal(hook.json().eventmeta.reason, 'Updated');
  assert.deepEqual(slack.json(), { channel: '#alerts', text: 'A `Pod` in namespace `default` has been `Updated`:\n`nginx`', replace_original: false, delete_original: false });
  assert.equal(teams.json().themeColor, 'DEFF22');
  assert.equal(ce.header('ce-id'), 'u-1:42:updated');
  assert.equal(ce.header('ce-subject'), 'default/nginx');
  const data = ce.json();
  assert.equal(data.operation, 'update');
  assert.equal(data.oldObj.metadata.name, 'nginx');
});

test("a Secret's values never leave the plugin", () => {
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default', uid: 'u-4' }, data: { password: 'aHVudGVyMg==' } };
  const out = testing.handle(kubewatch, 'added', secret, { config: config({ cloudevent: { url: 'http://events.test/' } }), http: [ok()] });
  assert.deepEqual(out.requests[0].json().obj.data, { password: 'W3JlZGFjdGVkIGJ5IGt1YmV3YXRjaF0=' });
  assert.ok(!out.requests[0].text().includes('aHVudGVyMg=='));
});

test('a receiver that is down is retried after every other receiver got the change', () => {
  const handlers = { webhook: { url: WEBHOOK }, msteams: { webhookurl: 'https://teams.test/w' } };
  const replies = [testing.reply({ url: WEBHOOK, status: 503 }), ok('https://teams.test/*')];
  assert.throws(
    () => testing.handle(kubewatch, 'added', pod(), { config: config(handlers), http: replies }),
    (e) => {
      const failed = e as RetryableError & testing.Failure;
      assert.deepEqual(failed.requests.map((r) => r.url), [WEBHOOK, 'https://teams.test/w'], 'Teams got the change');
      return failed instanceof RetryableError && failed.message === 'webhook: the receiver answered 503';
    },
  );
  const refusedThenDown = [testing.reply({ url: WEBHOOK, status: 404 }), testing.reply({ url: 'https://teams.test/*', status: 502 })];
  assert.throws(
    () => testing.handle(kubewatch, 'added', pod(), { config: config(handlers), http: refusedThenDown }),
    (e) => e instanceof RetryableError && e.message === 'msteams: the receiver answered 502',
    'a receiver that is down gets the change later, though another refused it',
  );
  const timeout = testing.reply({ url: WEBHOOK, error: { kind: 'timeout', reason: 'http://receiver.test:80: no response within 10s' } });
  assert.throws(
    () => testing.handle(kubewatch, 'added', pod(), { config: config({ webhook: { url: WEBHOOK } }), http: [timeout] }),
    (e) => e instanceof RetryableError && e.message === 'webhook: timeout: http://receiver.test:80: no response within 10s',
  );
});

test('a refused notification or a URL not granted is not retried', () => {
  assert.throws(
    () => testing.handle(kubewatch, 'added', pod(), { config: config({ webhook: { url: WEBHOOK } }), http: [testing.reply({ status: 404 })] }),
    (e) => e instanceof PermanentError && e.message === 'webhook: the receiver refused the notification (404)',
  );
  const denied = testing.reply({ error: { kind: 'denied', reason: 'http://receiver.test:80 is not granted: add it to [http] allow in kubewatch-ts.toml' } });
  assert.throws(
    () => testing.handle(kubewatch, 'added', pod(), { config: config({ webhook: { url: WEBHOOK } }), http: [denied] }),
    (e) => e instanceof PermanentError && e.message.startsWith('webhook: denied: http://receiver.test:80 is not granted'),
  );
});

test('handlers this plugin does not support are logged, and a handler without its URL is refused', () => {
  const out = testing.handle(kubewatch, 'added', pod(), { config: config({ webhook: { url: WEBHOOK }, smtp: { to: 'a@b' } }), http: [ok()] });
  assert.deepEqual(out.logs.map((l) => [l.level, l.message]), [['warn', 'handler smtp is not supported by this plugin; configure webhook, slackwebhook, msteams or cloudevent']]);
  assert.throws(() => testing.handle(kubewatch, 'added', pod(), { config: config({ msteams: {} }) }), {
    message: 'settings: handler.msteams.webhookurl: missing',
  });
});

test('the manifest watches every kind kubewatch knows, and asks for any receiver', () => {
  const manifest = testing.describe(kubewatch);
  assert.equal(manifest.parent, undefined);
  assert.equal(manifest.watches.length, 20);
  assert.ok(manifest.watches.some((w) => w.kind.kind === kinds.Pod.kind && w.kind.group === ''));
  assert.deepEqual(manifest.outbound, ['http://*:*', 'https://*:*']);
});
