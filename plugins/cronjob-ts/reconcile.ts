// The tutorial's controller as a level-based decision: classify the observed Jobs, delete
// the finished ones beyond the history limits (the others stay: the manifest keeps Jobs
// unlisted), start the Job of the
// latest missed run (unless suspended, too late, or forbidden by the concurrency policy),
// report `active` and `lastScheduleTime`, and come back at the next run. The same
// decisions as plugins/cronjob's `reconcile` module.

import { Event, KubeObject, PermanentError, Request, Response, conditionsFromStatus, kinds, setStatusCondition } from '@kubewasm/sdk';
import type { JsonObject } from '@kubewasm/sdk';

import { type Schedule, CronError, next, parse, rfc3339 } from './cron.ts';

/** The annotation on each Job with the time of the run it is for (RFC 3339). */
export const SCHEDULED_AT = 'batch.tutorial.kubebuilder.io/scheduled-at';

/** More missed runs than this since the last one: the tutorial gives up and asks for a
 * starting deadline. */
const MAX_MISSED = 100;

/** The `v1` spec, as far as the controller reads it. */
interface Spec {
  schedule: string;
  startingDeadlineSeconds: number | undefined;
  concurrencyPolicy: string;
  suspend: boolean;
  jobTemplate: JsonObject;
  successfulJobsHistoryLimit: number | undefined;
  failedJobsHistoryLimit: number | undefined;
}

function readSpec(parent: KubeObject): Spec {
  const optional = (path: string) => parent.field(path, 'integer', null) ?? undefined;
  return {
    schedule: parent.field('spec.schedule', 'string', ''),
    startingDeadlineSeconds: optional('spec.startingDeadlineSeconds'),
    concurrencyPolicy: parent.field('spec.concurrencyPolicy', 'string', '') || 'Allow',
    suspend: parent.field('spec.suspend', 'boolean', false),
    jobTemplate: parent.field('spec.jobTemplate', 'object', {}),
    successfulJobsHistoryLimit: optional('spec.successfulJobsHistoryLimit'),
    failedJobsHistoryLimit: optional('spec.failedJobsHistoryLimit'),
  };
}

/** One observed Job and what the controller reads of it. */
interface Observed {
  job: KubeObject;
  scheduled: Date | undefined;
  started: Date | undefined;
}

function time(value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined;
  const t = new Date(value);
  return Number.isNaN(t.getTime()) ? undefined : t;
}

/** `Complete` or `Failed` if the Job has finished (that condition `True`). */
function finished(job: KubeObject): string | undefined {
  const conditions: JsonObject[] = Array.isArray(job.status?.conditions) ? job.status.conditions : [];
  return ['Complete', 'Failed'].find((t) => conditions.some((c) => c.type === t && c.status === 'True'));
}

export function reconcileCronJob(request: Request): Response {
  const parent = request.parent;
  const spec = readSpec(parent);
  const now = request.now;
  const jobs: Observed[] = request.childrenOf(kinds.Job).map((job) => ({
    job,
    scheduled: time(job.annotations[SCHEDULED_AT]),
    started: time(job.status?.startTime),
  }));
  const active = jobs.filter((j) => finished(j.job) === undefined);
  const succeeded = jobs.filter((j) => finished(j.job) === 'Complete');
  const failed = jobs.filter((j) => finished(j.job) === 'Failed');
  // The latest run of a Job still there, or the one the status records: a Job the history
  // limits already deleted must not make its run look missed.
  let lastSchedule = latest([...jobs.map((j) => j.scheduled), time(parent.status?.lastScheduleTime)]);

  // History: the oldest finished Jobs beyond the limits are deleted; every other Job stays
  // without being named, Jobs being kept unlisted.
  const deleted: KubeObject[] = [];
  for (const [done, limit] of [
    [succeeded, spec.successfulJobsHistoryLimit],
    [failed, spec.failedJobsHistoryLimit],
  ] as const) {
    const byStart = [...done].sort((a, b) => (a.started?.getTime() ?? -Infinity) - (b.started?.getTime() ?? -Infinity));
    const over = limit === undefined ? 0 : Math.max(0, byStart.length - Math.max(0, limit));
    deleted.push(...byStart.slice(0, over).map((j) => j.job));
  }

  const response = new Response();
  let requeue: number | undefined;
  let replaceActive = false;
  if (!spec.suspend) {
    let schedule: Schedule;
    try {
      schedule = parse(spec.schedule);
    } catch (e) {
      if (!(e instanceof CronError)) throw e;
      throw new PermanentError(`unparseable schedule ${JSON.stringify(spec.schedule)}: ${e.message}`);
    }
    const [missed, upcoming] = runs(schedule, parent, spec, lastSchedule, now);
    requeue = upcoming === undefined ? undefined : upcoming.getTime() - now.getTime();
    if (missed !== undefined) {
      const tooLate = spec.startingDeadlineSeconds !== undefined && missed.getTime() + spec.startingDeadlineSeconds * 1000 < now.getTime();
      if (tooLate) {
        response.event(Event.warning('MissedSchedule', `Missed starting deadline for run at ${rfc3339(missed)}`));
      } else if (spec.concurrencyPolicy === 'Forbid' && active.length > 0) {
        response.event(
          Event.normal('JobAlreadyActive', `Not starting the run at ${rfc3339(missed)}: concurrency policy Forbid and ${active.length} active`),
        );
      } else {
        replaceActive = spec.concurrencyPolicy === 'Replace';
        const job = jobFor(parent, spec.jobTemplate, missed);
        if (!jobs.some((j) => j.job.name === job.metadata.name)) {
          response.child(job);
          response.event(Event.normal('SuccessfulCreate', `Created job ${job.metadata.name}`));
        }
        lastSchedule = latest([lastSchedule, missed]);
      }
    }
  }
  const stillActive = replaceActive ? [] : active;
  if (replaceActive) deleted.push(...active.map((j) => j.job));
  for (const job of deleted) response.deleteChild(job);

  const status: JsonObject = {};
  if (stillActive.length > 0) status.active = stillActive.map((j) => j.job.objectReference());
  if (lastSchedule !== undefined) status.lastScheduleTime = rfc3339(lastSchedule);
  status.conditions = conditions(parent, spec.suspend, stillActive.length, failed.length, now);
  response.status = status;
  if (requeue !== undefined && requeue >= 0) response.requeueAfterMs = requeue;
  return response;
}

function latest(times: (Date | undefined)[]): Date | undefined {
  return times.reduce<Date | undefined>((a, t) => (t !== undefined && (a === undefined || t > a) ? t : a), undefined);
}

/** The latest run missed since the last one (or since the CronJob was created, bounded by
 * the starting deadline) and the next run after `now`: the tutorial's `getNextSchedule`. */
function runs(schedule: Schedule, parent: KubeObject, spec: Spec, lastSchedule: Date | undefined, now: Date): [Date | undefined, Date | undefined] {
  let earliest = lastSchedule ?? parent.creationTimestamp ?? now;
  if (spec.startingDeadlineSeconds !== undefined) {
    const bound = new Date(now.getTime() - spec.startingDeadlineSeconds * 1000);
    if (bound > earliest) earliest = bound;
  }
  const upcoming = next(schedule, now);
  if (earliest > now) return [undefined, upcoming];
  let missed: Date | undefined;
  let count = 0;
  for (let t = next(schedule, earliest); t !== undefined && t <= now; t = next(schedule, t)) {
    missed = t;
    count += 1;
    if (count > MAX_MISSED) {
      throw new PermanentError('Too many missed start times (> 100). Set or decrease .spec.startingDeadlineSeconds or check clock skew.');
    }
  }
  return [missed, upcoming];
}

/** The Job of the run at `scheduled`: named after the CronJob and the run's Unix time (the
 * same name on every reconcile, so never twice), the template's labels, annotations and
 * spec, and the run's time. */
function jobFor(parent: KubeObject, template: JsonObject, scheduled: Date): JsonObject {
  const annotations = { ...(template.metadata?.annotations ?? {}), [SCHEDULED_AT]: rfc3339(scheduled) };
  const metadata: JsonObject = { name: `${parent.name}-${Math.floor(scheduled.getTime() / 1000)}`, annotations };
  if (parent.namespace !== undefined) metadata.namespace = parent.namespace;
  const labels = template.metadata?.labels;
  if (labels !== undefined && Object.keys(labels).length > 0) metadata.labels = labels;
  return { apiVersion: 'batch/v1', kind: 'Job', metadata, spec: template.spec ?? null };
}

/** `Available` and `Degraded`, kept as apimachinery keeps conditions. */
function conditions(parent: KubeObject, suspended: boolean, active: number, failed: number, now: Date) {
  const conditions = conditionsFromStatus(parent.status);
  const observedGeneration = parent.generation;
  const available = suspended
    ? { status: false, reason: 'Suspended', message: 'CronJob is suspended' }
    : active > 0
      ? { status: true, reason: 'JobsActive', message: `${active} job(s) are currently active` }
      : { status: true, reason: 'NoJobsActive', message: 'No jobs are currently active' };
  setStatusCondition(conditions, { type: 'Available', ...available, observedGeneration }, now);
  const degraded =
    failed > 0
      ? { status: true, reason: 'JobsFailed', message: `${failed} job(s) have failed` }
      : { status: false, reason: 'NoJobsFailed', message: 'No job has failed' };
  setStatusCondition(conditions, { type: 'Degraded', ...degraded, observedGeneration }, now);
  return conditions;
}
