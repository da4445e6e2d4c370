// The tutorial's webhooks: defaulting fills in what the spec leaves unset
// (`concurrencyPolicy: Allow`, `suspend: false`, history limits 3 and 1) and nothing else;
// validation refuses a name the Jobs' names could not extend and a schedule robfig/cron
// does not parse, with the tutorial's messages. And `v1` <-> `v2` as the multi-version
// tutorial converts them: `v1`'s `schedule` string `"0 9 * * 1"` is `v2`'s
// `schedule: {minute: "0", hour: "9", dayOfWeek: "1"}`, a `*` field left out; everything
// else is carried over as it is, so `v1` -> `v2` -> `v1` gives back the same object.

import { AdmissionRequest, Defaulted, Denial, KubeObject, Operation, PermanentError, Verdict } from '@kubewasm/sdk';
import type { JsonObject, JsonPatchOperation } from '@kubewasm/sdk';

import { CronError, parse } from './cron.ts';

export const GROUP = 'batch.tutorial.kubebuilder.io';

/** The Job name is the CronJob's and `-` with ten digits of a Unix time: 63 - 11. */
export const MAX_NAME = 52;

/** What defaulting fills in, in the order of controller-runtime's JSON patch. */
const DEFAULTS: [string, unknown][] = [
  ['concurrencyPolicy', 'Allow'],
  ['failedJobsHistoryLimit', 1],
  ['successfulJobsHistoryLimit', 3],
  ['suspend', false],
];

/** Fills in the unset fields of the spec (an empty `concurrencyPolicy` counts as unset, as
 * Go reads it), as a JSON patch. */
export function defaultCronJob(request: AdmissionRequest): Defaulted {
  const object = request.object;
  if (object === undefined) return Defaulted.unchanged();
  const spec = object.spec;
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw Denial.invalid('spec', 'Required value');
  const unset = (field: string) => spec[field] === undefined || spec[field] === null || (field === 'concurrencyPolicy' && spec[field] === '');
  const patch: JsonPatchOperation[] = DEFAULTS.filter(([field]) => unset(field)).map(([field, value]) => ({
    op: field in spec ? 'replace' : 'add',
    path: `/spec/${field}`,
    value,
  }));
  return patch.length === 0 ? Defaulted.unchanged() : Defaulted.patch(patch);
}

/** The tutorial's validation of a create or update: the name first, then the schedule; a
 * delete is allowed. A schedule that parses but that `v2` cannot hold is allowed with a
 * warning. */
export function validateCronJob(request: AdmissionRequest): Verdict {
  const object = request.object;
  if (request.operation === Operation.Delete || object === undefined) return Verdict.allow();
  const denial = new Denial();
  const name = object.name;
  if (name.length > MAX_NAME) denial.field('metadata.name', `Invalid value: ${JSON.stringify(name)}: must be no more than ${MAX_NAME} characters`);
  const schedule = typeof object.spec?.schedule === 'string' ? object.spec.schedule : '';
  try {
    parse(schedule);
  } catch (e) {
    if (!(e instanceof CronError)) throw e;
    denial.field('spec.schedule', `Invalid value: ${JSON.stringify(schedule)}: ${e.message}`);
  }
  if (denial.causes.length > 0) return Verdict.deny(denial);
  if (v2Schedule(schedule) === undefined) {
    return Verdict.allow().warning(
      `spec.schedule ${JSON.stringify(schedule)} is not five fields separated by single spaces: the object cannot be read as ${GROUP}/v2`,
    );
  }
  return Verdict.allow();
}

/** The `v2` fields, in the order of the five `v1` fields. */
const FIELDS = ['minute', 'hour', 'dayOfMonth', 'month', 'dayOfWeek'];

/** `object` (a CronJob of either version) in `desired` (`group/version`). */
export function convertCronJob(object: KubeObject, desired: string): JsonObject {
  const version = (apiVersion: string) => {
    const v = apiVersion.startsWith(`${GROUP}/`) ? apiVersion.slice(GROUP.length + 1) : undefined;
    if (v !== 'v1' && v !== 'v2') throw new PermanentError(`${apiVersion} is not a version of ${GROUP} this plugin knows (v1, v2)`);
    return v;
  };
  const [from, to] = [version(String(object.apiVersion)), version(desired)];
  const converted: JsonObject = { ...JSON.parse(JSON.stringify(object)), apiVersion: desired };
  const spec = converted.spec;
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return converted;
  if (from === 'v1' && to === 'v2') {
    const v2 = v2Schedule(typeof spec.schedule === 'string' ? spec.schedule : '');
    if (v2 === undefined) throw new PermanentError('invalid schedule: not a standard 5-field schedule');
    spec.schedule = v2;
  } else if (from === 'v2' && to === 'v1') {
    const schedule = spec.schedule ?? {};
    spec.schedule = FIELDS.map((f) => (typeof schedule[f] === 'string' ? schedule[f] : '*')).join(' ');
  }
  return converted;
}

/** `schedule` as `v2`'s struct: five fields split at single spaces, `*` left out;
 * `undefined` for anything else (a descriptor such as `@daily`, tabs, double spaces). */
export function v2Schedule(schedule: string): Record<string, string> | undefined {
  const parts = schedule.split(' ');
  if (parts.length !== FIELDS.length) return undefined;
  return Object.fromEntries(FIELDS.map((f, i) => [f, parts[i]]).filter(([, part]) => part !== '*'));
}
