// What kubewatch sends, byte for byte: the unit tests of plugins/kubewatch's notify.rs.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { Change } from '@kubewasm/sdk';

import { type Notice, type Notification, cloudevent, message, percentEncode, reason, redact, slack, teams, webhook } from '../notify.ts';

const notice = (change: Change): Notice => ({
  kind: 'Pod',
  apiVersion: 'v1',
  name: 'nginx',
  namespace: 'default',
  reason: reason(change),
  time: '2026-01-02T03:04:05.123456789Z',
  id: 'u1:42:added',
  change,
  object: { kind: 'Pod', metadata: { name: 'nginx' } },
  oldObject: undefined,
});

const header = (n: Notification, name: string) => n.headers.find(([k]) => k === name)?.[1];

test("the message is kubewatch's", () => {
  assert.equal(message(notice('added')), 'A `Pod` in namespace `default` has been `Created`:\n`nginx`');
  const ns = { ...notice('deleted'), kind: 'Namespace', name: 'team-a', namespace: '' };
  assert.equal(message(ns), 'A `Namespace` in namespace `` has been `Deleted`:\n`team-a`');
});

test("the webhook payload is kubewatch's", () => {
  const n = webhook('http://h/hook', notice('added'));
  assert.equal(
    n.body,
    '{"eventmeta":{"kind":"Pod","name":"nginx","namespace":"default","reason":"Created"},"text":"A `Pod` in namespace `default` has been `Created`:\\n`nginx`","time":"2026-01-02T03:04:05.123456789Z"}',
  );
  assert.deepEqual([n.method, n.url], ['POST', 'http://h/hook']);
});

test('the Slack payload leaves out what is not set', () => {
  const config = { slackwebhookurl: 'https://hooks.slack.com/services/T/B/X', channel: '#alerts', username: 'kubewatch', emoji: ':k8s:' };
  assert.equal(
    slack(config, notice('added')).body,
    '{"username":"kubewatch","icon_emoji":":k8s:","channel":"#alerts","text":"A `Pod` in namespace `default` has been `Created`:\\n`nginx`","replace_original":false,"delete_original":false}',
  );
  const bare = { ...config, channel: '', username: '', emoji: '' };
  assert.ok(slack(bare, notice('added')).body.startsWith('{"text":'));
});

test("the Teams card is kubewatch's", () => {
  assert.equal(
    teams('https://x.webhook.office.com/w', notice('added')).body,
    '{"@type":"MessageCard","@context":"http://schema.org/extensions","themeColor":"2DC72D","summary":"kubewatch notification received","title":"kubewatch","sections":[{"activityTitle":"A `Pod` in namespace `default` has been `Created`:\\n`nginx`","facts":null,"markdown":true}]}\n',
  );
  assert.ok(teams('https://x/w', notice('updated')).body.includes('"themeColor":"DEFF22"'));
  assert.ok(teams('https://x/w', notice('deleted')).body.includes('"themeColor":"8C1A1A"'));
});

test('a CloudEvent goes in binary mode with the delivery id', () => {
  const config = { url: 'http://h/ce', source: 'https://github.com/aantn/kubewatch', type: 'KUBERNETES_TOPOLOGY_CHANGE', clusteruid: '' };
  const n = cloudevent(config, notice('added'));
  assert.equal(header(n, 'ce-specversion'), '1.0');
  assert.equal(header(n, 'ce-id'), 'u1:42:added');
  assert.equal(header(n, 'ce-source'), 'https://github.com/aantn/kubewatch');
  assert.equal(header(n, 'ce-type'), 'KUBERNETES_TOPOLOGY_CHANGE');
  assert.equal(header(n, 'ce-subject'), 'default/nginx');
  assert.equal(header(n, 'Content-Type'), 'application/json');
  assert.equal(header(n, 'ce-datacontenttype'), undefined, 'binary mode carries it as Content-Type only');
  const data = JSON.parse(n.body);
  assert.equal(data.operation, 'create');
  assert.equal(data.obj.metadata.name, 'nginx');
  assert.equal(data.oldObj, null);
  const cluster = cloudevent(config, { ...notice('deleted'), kind: 'Namespace', name: 'team-a', namespace: '' });
  assert.equal(header(cluster, 'ce-subject'), 'team-a');
});

test('header values are percent-encoded as the binding says', () => {
  assert.equal(percentEncode('Euro € 😀'), 'Euro%20%E2%82%AC%20%F0%9F%98%80');
  assert.equal(percentEncode('a"b%c'), 'a%22b%25c');
});

test('secret values are never sent', () => {
  const redacted = redact({ kind: 'Secret', data: { k: 'c2VjcmV0' }, stringData: { s: 'secret' } });
  assert.deepEqual(redacted.data, { k: 'W3JlZGFjdGVkIGJ5IGt1YmV3YXRjaF0=' });
  assert.deepEqual(redacted.stringData, { s: '[redacted by kubewatch]' });
});
