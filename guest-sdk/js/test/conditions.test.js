// The conditions helper against the table every SDK's helper is held to
// (guest-sdk/tests/conditions_cases.json: apimachinery's SetStatusCondition and its
// siblings), and a plugin that keeps lastTransitionTime across reconciles with it.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import {
  KindRef,
  Manifest,
  PermanentError,
  Response,
  conditionsFromStatus,
  findStatusCondition,
  isStatusConditionFalse,
  isStatusConditionTrue,
  plugin,
  removeStatusCondition,
  setStatusCondition,
} from '@kubewasm/sdk';
import { reconcile } from '@kubewasm/sdk/testing';

const TABLE = JSON.parse(readFileSync(new URL('../../tests/conditions_cases.json', import.meta.url), 'utf8'));

for (const c of TABLE.set) {
  test(`set: ${c.name}`, () => {
    const conditions = structuredClone(c.before);
    const changed = setStatusCondition(conditions, c.condition, TABLE.now);
    assert.deepEqual(conditions, c.after);
    assert.equal(changed, c.changed);
  });
}

for (const c of TABLE.remove) {
  test(`remove: ${c.name}`, () => {
    const conditions = structuredClone(c.before);
    assert.equal(removeStatusCondition(conditions, c.type), c.removed);
    assert.deepEqual(conditions, c.after);
  });
}

for (const c of TABLE.query) {
  test(`find, is true, is false: ${c.name}`, () => {
    assert.equal(findStatusCondition(c.conditions, c.type) !== undefined, c.found);
    assert.equal(isStatusConditionTrue(c.conditions, c.type), c.isTrue);
    assert.equal(isStatusConditionFalse(c.conditions, c.type), c.isFalse);
  });
}

for (const c of TABLE.invalid) {
  test(`refused: ${c.name}`, () => {
    const conditions = [];
    assert.throws(
      () => setStatusCondition(conditions, c.condition, TABLE.now),
      (e) => e instanceof PermanentError && c.error.every((part) => e.message.includes(part)),
    );
    assert.deepEqual(conditions, []);
  });
}

for (const c of TABLE.valid) {
  test(`accepted: ${c.name}`, () => {
    assert.equal(setStatusCondition([], c.condition, TABLE.now), true);
  });
}

test('a boolean is True or False and a Date is written to the second', () => {
  const conditions = [];
  setStatusCondition(conditions, { type: 'Ready', status: false, reason: 'Waiting' }, TABLE.now);
  assert.equal(conditions[0].status, 'False');
  setStatusCondition(conditions, { type: 'Ready', status: true, reason: 'Available' }, new Date('2026-05-06T07:08:09.123Z'));
  assert.deepEqual(conditions, [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-05-06T07:08:09Z' }]);
});

test('a missing now is said, not read as a time', () => {
  assert.throws(() => setStatusCondition([], { type: 'Ready', status: true, reason: 'Available' }), /now must be a Date or RFC 3339 text/);
});

test('conditionsFromStatus copies the observed list and names what is not one', () => {
  const observed = { conditions: [{ type: 'Ready', status: 'True' }] };
  const conditions = conditionsFromStatus(observed);
  conditions[0].status = 'False';
  assert.equal(observed.conditions[0].status, 'True', 'the observed parent is left as it is');
  assert.deepEqual(conditionsFromStatus(undefined), []);
  assert.deepEqual(conditionsFromStatus({}), []);
  assert.throws(() => conditionsFromStatus({ conditions: [{}, 'Ready'] }), /status\.conditions\[1\]/);
  assert.throws(() => conditionsFromStatus({ conditions: { Ready: true } }), /status\.conditions is not a list/);
});

// Ready when the spec says so: a status written from the observed one.
const gauge = plugin({
  describe: () => new Manifest('gauge', new KindRef('example.com', 'v1', 'Gauge', 'gauges')),
  reconcile(request) {
    const parent = request.parent;
    const ready = parent.field('spec.ready', 'boolean');
    const conditions = conditionsFromStatus(parent.status);
    setStatusCondition(
      conditions,
      { type: 'Ready', status: ready, reason: ready ? 'Available' : 'Waiting', observedGeneration: parent.generation },
      request.now,
    );
    return new Response({ status: { conditions } });
  },
});

test('a plugin keeps the transition time until the status changes', () => {
  const at = (now, ready, generation, status) =>
    reconcile(
      gauge,
      {
        apiVersion: 'example.com/v1', kind: 'Gauge', spec: { ready }, status,
        metadata: { name: 'g', namespace: 'default', uid: 'u1', generation },
      },
      { now },
    ).status;
  const first = at('2026-01-01T00:00:00Z', false, 1, undefined);
  assert.equal(first.conditions[0].lastTransitionTime, '2026-01-01T00:00:00Z');
  const again = at('2026-01-02T00:00:00Z', false, 2, first);
  assert.equal(again.conditions[0].lastTransitionTime, '2026-01-01T00:00:00Z');
  assert.equal(again.conditions[0].observedGeneration, 2);
  const ready = at('2026-01-03T00:00:00Z', true, 3, again);
  assert.deepEqual(ready.conditions[0], {
    type: 'Ready', status: 'True', reason: 'Available', message: '', observedGeneration: 3, lastTransitionTime: '2026-01-03T00:00:00Z',
  });
});
