/// <reference path="./interfaces/kubewasm-reconciler-admission.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-handler.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-http.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-log.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-plugin-info.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-reconciler.d.ts" />
/// <reference path="./interfaces/kubewasm-reconciler-types.d.ts" />
declare module 'kubewasm:reconciler/plugin@0.2.0' {
  export type * as KubewasmReconcilerHttp020 from 'kubewasm:reconciler/http@0.2.0'; // import kubewasm:reconciler/http@0.2.0
  export type * as KubewasmReconcilerLog020 from 'kubewasm:reconciler/log@0.2.0'; // import kubewasm:reconciler/log@0.2.0
  export type * as KubewasmReconcilerTypes020 from 'kubewasm:reconciler/types@0.2.0'; // import kubewasm:reconciler/types@0.2.0
  export * as pluginInfo from 'kubewasm:reconciler/plugin-info@0.2.0'; // export kubewasm:reconciler/plugin-info@0.2.0
  export * as reconciler from 'kubewasm:reconciler/reconciler@0.2.0'; // export kubewasm:reconciler/reconciler@0.2.0
  export * as handler from 'kubewasm:reconciler/handler@0.2.0'; // export kubewasm:reconciler/handler@0.2.0
  export * as admission from 'kubewasm:reconciler/admission@0.2.0'; // export kubewasm:reconciler/admission@0.2.0
}
