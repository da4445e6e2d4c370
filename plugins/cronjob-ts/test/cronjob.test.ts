// The behaviour of plugins/cronjob (its native tests), for the TypeScript port: the
// reconcile the host would run, the tutorial's defaulting and validation, and `v1` <->
// `v2` conversion, on the Rust plugin's examples.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { Operation, PermanentError } from '@kubewasm/sdk';
import type { JsonObject, KubeObject } from '@kubewasm/sdk';
import * as testing from '@kubewasm/sdk/testing';
import { parse as parseYaml } from 'yaml';

import { reconciler } from '../app.ts';
import { next, parse } from '../cron.ts';

const example = (name: string): JsonObject => parseYaml(readFileSync(new URL(`../../cronjob/examples/${name}`, import.meta.url), 'utf8'));
const jobs = (): JsonObject[] => example('observed.yaml').items;
const withSpec = (parent: JsonObject, spec: JsonObject): JsonObject => ({ ...parent, spec: { ...parent.spec, ...spec } });
const names = (children: KubeObject[]) => children.map((c) => c.name);
const NOW = '2026-01-01T00:00:30Z';
const V1 = 'batch.tutorial.kubebuilder.io/v1';
const V2 = 'batch.tutorial.kubebuilder.io/v2';

// ---- cron ------------------------------------------------------------------------

test('refusals read as robfig/cron words them', () => {
  const cases: [string, string][] = [
    ['', 'Empty spec string'],
    ['invalid-cron-schedule', 'Expected exactly 5 fields, found 1: invalid-cron-schedule'],
    ['* * * * * *', 'Expected exactly 5 fields, found 6: * * * * * *'],
    ['* * * * 7', 'End of range (7) above maximum (6): 7'],
    ['* * 0 * *', 'Beginning of range (0) below minimum (1): 0'],
    ['5-2 * * * *', 'Beginning of range (5) beyond end of range (2): 5-2'],
    ['*/0 * * * *', 'Step of range should be a positive number: */0'],
    ['1-2-3 * * * *', 'Too many hyphens: 1-2-3'],
    ['1/2/3 * * * *', 'Too many slashes: 1/2/3'],
    ['x * * * *', 'Failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'],
    ['@reboot', 'Unrecognized descriptor: @reboot'],
    ['@every x', 'Failed to parse duration @every x: time: invalid duration "x"'],
  ];
  for (const [spec, message] of cases) assert.throws(() => parse(spec), { message }, spec);
  for (const spec of ['*/5 * * * *', '0 0 * * ?', '0 9 * JAN-mar MON-fri', '5/15 1,2,,3 1-31 * 0-6', '@midnight', '@every 1h30m', '  0  0 * * *  ']) {
    assert.doesNotThrow(() => parse(spec), spec);
  }
});

test('runs come when robfig/cron schedules them', () => {
  const at = (spec: string, after: string) => next(parse(spec), new Date(after))?.toISOString();
  assert.equal(at('*/5 * * * *', '2026-01-01T00:03:59.500Z'), '2026-01-01T00:05:00.000Z');
  assert.equal(at('0 9 * * mon', '2026-01-01T00:00:00Z'), '2026-01-05T09:00:00.000Z');
  assert.equal(at('@yearly', '2026-03-01T00:00:00Z'), '2027-01-01T00:00:00.000Z');
  assert.equal(at('0 0 31 * *', '2026-02-01T00:00:00Z'), '2026-03-31T00:00:00.000Z');
  assert.equal(at('@every 1h30m', '2026-01-01T00:00:00.250Z'), '2026-01-01T01:30:00.000Z');
  // Neither day field starts with `*`: either may match; `*/2` does: both must.
  assert.equal(at('0 0 13 * 5', '2026-01-01T00:00:00Z'), '2026-01-02T00:00:00.000Z');
  assert.equal(at('0 0 */2 * 5', '2026-01-01T00:00:00Z'), '2026-01-09T00:00:00.000Z');
  assert.equal(at('0 0 30 2 *', '2026-01-01T00:00:00Z'), undefined);
});

// ---- reconcile -------------------------------------------------------------------

test('Jobs are kept unlisted, so that no branch deletes a running one by leaving it out', () => {
  assert.deepEqual(testing.describe(reconciler).keepUnlisted.map((k) => k.kind), ['Job']);
});

test('a due run starts its Job, keeps the running one and deletes beyond the history limit', () => {
  const out = testing.reconcile(reconciler, example('parent.yaml'), { children: jobs(), now: NOW });
  // 23:57 is the older of two complete Jobs with a limit of one: deleted by name. The
  // complete 23:58 and the running 23:59 are left out, so kept (Jobs are kept unlisted).
  assert.deepEqual(names(out.children), ['cronjob-sample-1767225600']);
  assert.deepEqual(names(out.deleted), ['cronjob-sample-1767225420']);
  const [created] = out.children;
  assert.equal(created.annotations['batch.tutorial.kubebuilder.io/scheduled-at'], '2026-01-01T00:00:00Z');
  assert.deepEqual(created.labels, { app: 'hello' });
  assert.deepEqual(created.spec, example('parent.yaml').spec.jobTemplate.spec);
  assert.equal(created.uid, '', 'a new Job, not a kept one');
  assert.equal(out.status?.lastScheduleTime, '2026-01-01T00:00:00Z');
  assert.deepEqual(out.status?.active.map((a: JsonObject) => a.name), ['cronjob-sample-1767225540']);
  assert.equal(out.status?.conditions[0].reason, 'JobsActive');
  assert.equal(out.requeueAfterMs, 30_000);
});

test('Forbid skips a run while a Job is active, and Replace ends the active one', () => {
  const run = (concurrencyPolicy: string) =>
    testing.reconcile(reconciler, withSpec(example('parent.yaml'), { concurrencyPolicy }), { children: jobs(), now: NOW });
  const forbid = run('Forbid');
  assert.deepEqual(names(forbid.children), []);
  assert.deepEqual(names(forbid.deleted), ['cronjob-sample-1767225420'], 'the running Job is not deleted');
  assert.equal(forbid.status?.lastScheduleTime, '2025-12-31T23:59:00Z');
  assert.ok(forbid.events.some((e) => e.reason === 'JobAlreadyActive'));
  const replace = run('Replace');
  assert.deepEqual(names(replace.children), ['cronjob-sample-1767225600']);
  assert.deepEqual(names(replace.deleted), ['cronjob-sample-1767225420', 'cronjob-sample-1767225540']);
  assert.equal(replace.status?.active, undefined);
});

test('a run whose Job the history limit deleted is not started again', () => {
  const parent = { ...withSpec(example('parent.yaml'), { successfulJobsHistoryLimit: 0 }), status: { lastScheduleTime: '2026-01-01T00:00:00Z' } };
  const out = testing.reconcile(reconciler, parent, { now: '2026-01-01T00:00:45Z' });
  assert.deepEqual(names(out.children), []);
  assert.equal(out.status?.lastScheduleTime, '2026-01-01T00:00:00Z');
  assert.equal(out.requeueAfterMs, 15_000);
});

test('a suspended CronJob starts nothing, deletes no running Job and is not requeued', () => {
  const out = testing.reconcile(reconciler, withSpec(example('parent.yaml'), { suspend: true }), { children: jobs(), now: NOW });
  assert.deepEqual(out.children, []);
  // The history limit still applies; the running 23:59 is left out, so kept.
  assert.deepEqual(names(out.deleted), ['cronjob-sample-1767225420']);
  assert.equal(out.requeueAfterMs, undefined);
  assert.equal(out.status?.conditions[0].reason, 'Suspended');
});

test('a run missed beyond the starting deadline is skipped and the next one awaited', () => {
  const late = testing.reconcile(reconciler, withSpec(example('parent.yaml'), { schedule: '0 * * * *', startingDeadlineSeconds: 10 }), { now: NOW });
  assert.deepEqual(late.children, []);
  assert.equal(late.requeueAfterMs, 3_570_000);
  const within = testing.reconcile(reconciler, withSpec(example('parent.yaml'), { schedule: '0 * * * *', startingDeadlineSeconds: 60 }), { now: NOW });
  assert.deepEqual(names(within.children), ['cronjob-sample-1767225600']);
});

test("more than a hundred missed runs fail with the tutorial's advice", () => {
  assert.throws(() => testing.reconcile(reconciler, example('parent.yaml'), { now: '2026-01-02T00:00:00Z' }), {
    name: 'PermanentError',
    message: /^Too many missed start times \(> 100\)\./,
  });
});

// ---- defaulting and validation ---------------------------------------------------

test("defaulting fills in the tutorial's four fields and nothing else", () => {
  const written = example('defaulted.yaml');
  const out = testing.defaulted(reconciler, written);
  const { schedule, jobTemplate, ...rest } = out.object.spec;
  assert.deepEqual(rest, { concurrencyPolicy: 'Allow', suspend: false, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 });
  assert.deepEqual([schedule, jobTemplate], [written.spec.schedule, written.spec.jobTemplate]);
  assert.deepEqual(out.object.metadata, written.metadata);
  assert.ok('patch' in out.mutation, 'a JSON patch, as controller-runtime sends');

  // Set fields stay as they are (the tutorial's "should not overwrite" case).
  const set = withSpec(written, { concurrencyPolicy: 'Forbid', suspend: true, successfulJobsHistoryLimit: 5, failedJobsHistoryLimit: 2 });
  const kept = testing.defaulted(reconciler, set);
  assert.deepEqual(kept.mutation, { unchanged: true });
  assert.deepEqual({ ...kept.object }, set);
  const updated = testing.defaulted(reconciler, withSpec(written, { concurrencyPolicy: '' }), { oldObject: set });
  assert.equal(updated.object.spec.concurrencyPolicy, 'Allow');
});

test("validation denies a long name and a bad schedule in the tutorial's words", () => {
  const verdict = testing.validated(reconciler, example('invalid.yaml'));
  assert.equal(verdict.allowed, false);
  assert.deepEqual(
    verdict.denied?.causes.map((c) => [c.field, c.message]),
    [
      ['metadata.name', 'Invalid value: "a-cronjob-whose-name-is-far-too-long-for-the-names-of-its-jobs": must be no more than 52 characters'],
      ['spec.schedule', 'Invalid value: "invalid-cron-schedule": Expected exactly 5 fields, found 1: invalid-cron-schedule'],
    ],
  );
  assert.ok(testing.validated(reconciler, example('defaulted.yaml')).allowed);
  const named = (name: string) => ({ ...example('defaulted.yaml'), metadata: { ...example('defaulted.yaml').metadata, name } });
  assert.ok(testing.validated(reconciler, named('a'.repeat(52)), { oldObject: example('defaulted.yaml') }).allowed);
  assert.equal(testing.validated(reconciler, named('a'.repeat(53))).allowed, false);
});

test("deletes are not validated: the tutorial's webhook registers creates and updates only", () => {
  assert.throws(() => testing.validated(reconciler, example('invalid.yaml'), { operation: Operation.Delete }), {
    name: 'HostWouldRefuse',
    message: /validates select: CREATE\/UPDATE of batch\.tutorial\.kubebuilder\.io\/v1 CronJob, not DELETE/,
  });
});

test('a schedule v2 cannot hold is allowed with a warning', () => {
  const verdict = testing.validated(reconciler, withSpec(example('defaulted.yaml'), { schedule: '@daily' }));
  assert.ok(verdict.allowed);
  assert.match(verdict.warnings[0], /cannot be read as batch\.tutorial\.kubebuilder\.io\/v2/);
});

// ---- conversion ------------------------------------------------------------------

function stored(): JsonObject {
  const parent = withSpec(example('parent.yaml'), { schedule: '0 9 * * 1-5', startingDeadlineSeconds: 30 });
  parent.metadata.labels = { team: 'a' };
  parent.status = {
    active: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'cronjob-sample-1', namespace: 'default', uid: 'u' }],
    lastScheduleTime: '2026-01-01T09:00:00Z',
    conditions: [
      { type: 'Available', status: 'True', reason: 'JobsActive', message: '1 job(s) are currently active', lastTransitionTime: '2026-01-01T09:00:00Z', observedGeneration: 1 },
    ],
  };
  return parent;
}

const plain = (objects: KubeObject[]) => JSON.parse(JSON.stringify(objects));

test('v1 reads as v2 and back without loss', () => {
  const v2 = testing.converted(reconciler, [stored()], V2);
  assert.equal(v2[0].apiVersion, V2);
  assert.deepEqual(v2[0].spec.schedule, { minute: '0', hour: '9', dayOfWeek: '1-5' });
  assert.deepEqual(v2[0].status, stored().status, 'conditions too, unlike the tutorial');
  const v1 = testing.converted(reconciler, plain(v2), V1);
  assert.deepEqual(plain(v1), [stored()]);
});

test('a v2 schedule leaves out star fields, and a descriptor cannot be read as v2', () => {
  const v2 = { ...stored(), apiVersion: V2, spec: { ...stored().spec, schedule: { minute: '*/5' } } };
  assert.equal(testing.converted(reconciler, [v2], V1)[0].spec.schedule, '*/5 * * * *');
  assert.throws(() => testing.converted(reconciler, [withSpec(stored(), { schedule: '@daily' })], V2), {
    message: /invalid schedule: not a standard 5-field schedule$/,
  });
  assert.throws(() => testing.converted(reconciler, [stored()], 'batch.tutorial.kubebuilder.io/v3'), (e) => {
    assert.ok(e instanceof PermanentError);
    assert.match(e.message, /batch\.tutorial\.kubebuilder\.io\/v3 is not a version/);
    return true;
  });
});
