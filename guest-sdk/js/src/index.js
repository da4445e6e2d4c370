// Write kubewasm reconciler plugins in JavaScript or TypeScript.
//
// A plugin module exports `reconciler = plugin({ describe, reconcile })`. Build it with
// `kubewasm-js build app.js -o app.wasm` and drop the `.wasm` file into the host's plugin
// directory. Test it natively with `@kubewasm/sdk/testing` under `node --test`: the same
// decoding, reconcile and encoding code runs there as in the component, and the answer is
// checked with the host's own rules.

export * as kinds from './builtin-kinds.js';
export * as log from './log.js';
export { ReconcileError, RetryableError, PermanentError } from './errors.js';
export { plugin } from './export.js';
export { KindRef } from './kinds.js';
export { Manifest, ManifestError } from './manifest.js';
export { KubeObject } from './objects.js';
export { LabelOperator, Query, Requirement, Selector } from './query.js';
export { Request } from './request.js';
export { Event, EventType, Response } from './response.js';
export { Refusal, validate } from './validate.js';
