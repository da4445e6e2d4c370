// A parent's `status.conditions`, kept as Kubernetes keeps them.
//
// The same rules as apimachinery's `meta.SetStatusCondition` and its siblings, which
// Kubebuilder controllers use: a condition's `lastTransitionTime` moves only when its
// status changes, its reason, message and `observedGeneration` are overwritten in place,
// and the order of the list is kept. The plugin's answer is the whole status, so the list
// starts from the observed parent's (`conditionsFromStatus`); "now" is the request's
// `request.now`, never the sandbox's clock. Every SDK's helper is held to one table of
// cases (guest-sdk/tests/conditions_cases.json).

import { PermanentError } from './errors.js';

// metav1.Condition's schema, as the API server enforces it.
const TYPE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const STATUSES = ['True', 'False', 'Unknown'];
const MAX_TYPE = 316;
const MAX_REASON = 1024;
const MAX_MESSAGE = 32768;

/** A copy of the conditions of an observed status (`parent.status`): empty when the status
 * or its `conditions` is absent; a `PermanentError` when `conditions` is not a list of
 * objects. */
export function conditionsFromStatus(status) {
  if (status === undefined || status === null) return [];
  if (typeof status !== 'object' || Array.isArray(status)) throw new PermanentError(`status is not an object: ${JSON.stringify(status)}`);
  const listed = status.conditions;
  if (listed === undefined || listed === null) return [];
  if (!Array.isArray(listed)) throw new PermanentError(`status.conditions is not a list: ${JSON.stringify(listed)}`);
  listed.forEach((item, i) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      throw new PermanentError(`status.conditions[${i}] is not a condition: ${JSON.stringify(item)}`);
    }
  });
  return JSON.parse(JSON.stringify(listed));
}

/** The first condition of `type`, itself (changing it changes the list), or `undefined`. */
export function findStatusCondition(conditions, type) {
  return conditions.find((c) => c?.type === type);
}

/** Whether the condition of `type` is present and `True`. */
export function isStatusConditionTrue(conditions, type) {
  return findStatusCondition(conditions, type)?.status === 'True';
}

/** Whether the condition of `type` is present and `False` (an absent one is neither). */
export function isStatusConditionFalse(conditions, type) {
  return findStatusCondition(conditions, type)?.status === 'False';
}

/** Removes every condition of `type` in place, keeping the order of the rest; whether one
 * was there. */
export function removeStatusCondition(conditions, type) {
  const kept = conditions.filter((c) => c?.type !== type);
  const removed = kept.length !== conditions.length;
  conditions.splice(0, conditions.length, ...kept);
  return removed;
}

/**
 * Sets the condition of `condition.type` in `conditions`, in place, and says whether the
 * list changed. `status` is `true`/`false` or `'True'`, `'False'`, `'Unknown'`. An absent
 * type is appended with `lastTransitionTime` the condition's own or `now` (a `Date` or RFC
 * 3339 text: `request.now`); a present one takes the new status (and that time) only when
 * the status differs, and the new reason, message and `observedGeneration` always
 * (`undefined` clears it). A type or reason the API server would refuse is a
 * `PermanentError` naming it; the list is then unchanged.
 */
export function setStatusCondition(conditions, condition, now) {
  const { type, reason, message = '', observedGeneration } = condition;
  const status = statusText(type, condition.status);
  check(type, reason, message);
  const time = rfc3339(condition.lastTransitionTime ?? now);
  const existing = findStatusCondition(conditions, type);
  if (existing === undefined) {
    const added = { type, status, reason, message };
    if (observedGeneration !== undefined && observedGeneration !== null) added.observedGeneration = observedGeneration;
    added.lastTransitionTime = time;
    conditions.push(added);
    return true;
  }
  let changed = false;
  if (existing.status !== status) {
    existing.status = status;
    existing.lastTransitionTime = time;
    changed = true;
  }
  for (const [key, value] of [['reason', reason], ['message', message]]) {
    if (existing[key] !== value) {
      existing[key] = value;
      changed = true;
    }
  }
  const generation = observedGeneration ?? undefined;
  if (existing.observedGeneration !== generation) {
    if (generation === undefined) delete existing.observedGeneration;
    else existing.observedGeneration = generation;
    changed = true;
  }
  return changed;
}

function statusText(type, status) {
  if (status === true) return 'True';
  if (status === false) return 'False';
  if (!STATUSES.includes(status)) throw new PermanentError(`condition ${type}: status "${status}" must be True, False or Unknown`);
  return status;
}

function check(type, reason, message) {
  if (typeof type !== 'string' || type.length > MAX_TYPE || !TYPE.test(type)) {
    throw new PermanentError(
      `condition type "${type}" is not valid: a name of letters, digits, '-', '_' and '.' beginning and ending ` +
        `with a letter or digit, optionally prefixed by a lowercase DNS subdomain and '/', at most ${MAX_TYPE} characters`,
    );
  }
  if (typeof reason !== 'string' || reason.length > MAX_REASON || !REASON.test(reason)) {
    throw new PermanentError(
      `condition ${type}: reason "${reason}" is not valid: it must begin with a letter, hold only letters, ` +
        `digits, '_', ',' and ':', end with a letter, digit or '_', and be at most ${MAX_REASON} characters`,
    );
  }
  if (typeof message !== 'string' || message.length > MAX_MESSAGE) {
    throw new PermanentError(`condition ${type}: message is not text of at most ${MAX_MESSAGE} characters`);
  }
}

/** `time` as the API server writes a `metav1.Time`: UTC, to the second. */
function rfc3339(time) {
  if (typeof time === 'string') return time;
  if (!(time instanceof Date)) throw new TypeError(`setStatusCondition: now must be a Date or RFC 3339 text (request.now), not ${time}`);
  return time.toISOString().replace(/\.\d+Z$/, 'Z');
}
