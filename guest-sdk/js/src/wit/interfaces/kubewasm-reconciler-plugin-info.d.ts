/// <reference path="./kubewasm-reconciler-types.d.ts" />
declare module 'kubewasm:reconciler/plugin-info@0.2.0' {
  /**
   * Describe the plugin. Called once when the host loads it, as its self-test.
   */
  export function describe(): Manifest;
  export type Manifest = import('kubewasm:reconciler/types@0.2.0').Manifest;
}
