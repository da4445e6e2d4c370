/// <reference path="./interfaces/kubewasm-reconciler-log.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-reconciler.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-types.d.ts" />
declare module 'kubewasm:reconciler/plugin@0.1.0' {
  export type * as KubewasmReconcilerLog010 from 'kubewasm:reconciler/log@0.1.0'; // import kubewasm:reconciler/log@0.1.0
  export type * as KubewasmReconcilerTypes010 from 'kubewasm:reconciler/types@0.1.0'; // import kubewasm:reconciler/types@0.1.0
  export * as reconciler from 'kubewasm:reconciler/reconciler@0.1.0'; // export kubewasm:reconciler/reconciler@0.1.0
}
