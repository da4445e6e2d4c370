/// <reference path="./kubewasm-reconciler-types.d.ts" />
declare module 'kubewasm:reconciler/reconciler@0.1.0' {
  /**
   * Describe the plugin. Called once when the host loads it, as its self-test.
   */
  export function describe(): Manifest;
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
  export type Manifest = import('kubewasm:reconciler/types@0.1.0').Manifest;
  export type Query = import('kubewasm:reconciler/types@0.1.0').Query;
  export type Request = import('kubewasm:reconciler/types@0.1.0').Request;
  export type Response = import('kubewasm:reconciler/types@0.1.0').Response;
  export type ReconcileError = import('kubewasm:reconciler/types@0.1.0').ReconcileError;
}
