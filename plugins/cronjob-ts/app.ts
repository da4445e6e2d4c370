// The Kubebuilder tutorial's CronJob (`batch.tutorial.kubebuilder.io`) as one plugin: its
// controller, its defaulting and validating webhooks, and the conversion between its two
// versions (`v1`, the storage version, with a `schedule` string; `v2` with a schedule
// struct). The same plugin as plugins/cronjob, in TypeScript.

import { AdmissionRule, KindRef, Manifest, kinds, plugin } from '@kubewasm/sdk';

import { GROUP, convertCronJob, defaultCronJob, validateCronJob } from './admission.ts';
import { reconcileCronJob } from './reconcile.ts';

// The Rust plugin's CRD, with both versions: the build puts the file's text in the component.
import CRD from '../cronjob/crd.yaml';

/** The CronJob of `version` (`v1`, `v2`). */
export const cronJob = (version: string) => new KindRef(GROUP, version, 'CronJob', 'cronjobs');

export const reconciler = plugin({
  describe() {
    // Jobs are kept unlisted: no branch of the decision deletes a running Job by leaving
    // it out; the history limits and `Replace` delete theirs by name (`deleteChild`).
    return new Manifest('cronjob-ts', cronJob('v1'), {
      children: [kinds.Job],
      keepUnlisted: [kinds.Job],
      defaults: [new AdmissionRule(cronJob('v1'))],
      validates: [new AdmissionRule(cronJob('v1'))],
      converts: true,
      crds: [CRD],
    });
  },
  reconcile: reconcileCronJob,
  default: defaultCronJob,
  validate: validateCronJob,
  convert: convertCronJob,
});
