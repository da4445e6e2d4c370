/// <reference path="./kubewasm-reconciler-types.d.ts" />
declare module 'kubewasm:reconciler/admission@0.2.0' {
  /**
   * Complete a write before it is stored: fill in defaults. An error refuses the write.
   */
  export { _default as default };
  function _default(request: AdmissionRequest): Defaulted;
  /**
   * Allow or refuse a write, after every default and the schema were applied.
   */
  export function validate(request: AdmissionRequest): Verdict;
  /**
   * Convert every object to `desired-api-version`, in order. Only `metadata.labels`
   * and `metadata.annotations` may change; the API server restores the rest of
   * `metadata`. An error fails the read or write that needed the conversion.
   */
  export function convert(request: ConversionRequest): Array<string>;
  export type AdmissionRequest = import('kubewasm:reconciler/types@0.2.0').AdmissionRequest;
  export type Defaulted = import('kubewasm:reconciler/types@0.2.0').Defaulted;
  export type Denial = import('kubewasm:reconciler/types@0.2.0').Denial;
  export type Verdict = import('kubewasm:reconciler/types@0.2.0').Verdict;
  export type ConversionRequest = import('kubewasm:reconciler/types@0.2.0').ConversionRequest;
}
