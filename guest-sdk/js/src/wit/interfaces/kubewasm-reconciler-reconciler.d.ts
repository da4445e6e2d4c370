/// <reference path="./kubewasm-reconciler-types.d.ts" />
declare module 'kubewasm:reconciler/reconciler@0.2.0' {
  /**
   * The related objects to hand to `reconcile` for this parent (JSON).
   * Return an empty list when the plugin reads nothing but its parent and children.
   */
  export function related(parent: string): Array<Query>;
  /**
   * Decide what should exist for one parent. Called in a fresh instance every
   * time: nothing survives between calls.
   */
  export function reconcile(request: Request): Response;
  export type Query = import('kubewasm:reconciler/types@0.2.0').Query;
  export type Request = import('kubewasm:reconciler/types@0.2.0').Request;
  export type Response = import('kubewasm:reconciler/types@0.2.0').Response;
  export type ReconcileError = import('kubewasm:reconciler/types@0.2.0').ReconcileError;
}
