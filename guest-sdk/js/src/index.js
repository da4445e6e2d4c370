// Write kubewasm plugins in JavaScript or TypeScript.
//
// A plugin module exports `reconciler = plugin({ describe, reconcile })` (a reconciler),
// or `plugin({ describe, handle })` (an event handler), or both; `http.fetch` sends the
// HTTP requests the operator granted. Build it with
// `kubewasm-js build app.js -o app.wasm` and drop the `.wasm` file into the host's plugin
// directory. Test it natively with `@kubewasm/sdk/testing` under `node --test`: the same
// decoding, reconcile and encoding code runs there as in the component, and the answer is
// checked with the host's own rules.

export * as kinds from './builtin-kinds.js';
export * as http from './http.js';
export * as log from './log.js';
export {
  conditionsFromStatus,
  findStatusCondition,
  isStatusConditionFalse,
  isStatusConditionTrue,
  removeStatusCondition,
  setStatusCondition,
} from './conditions.js';
export { AdmissionRequest, AdmissionRule, Defaulted, Denial, Operation, Verdict } from './admission.js';
export { ReconcileError, RetryableError, PermanentError } from './errors.js';
export { Change, ObjectEvent } from './event.js';
export { plugin } from './export.js';
export { HttpRequestError } from './http.js';
export { KindRef } from './kinds.js';
export { Manifest, ManifestError, Watch } from './manifest.js';
export { KubeObject } from './objects.js';
export { LabelOperator, Query, Requirement, Selector } from './query.js';
export { Request } from './request.js';
export { Event, EventType, Response } from './response.js';
export { Refusal, validate } from './validate.js';
