// CustomResourceDefinitions from a small schema builder: one description of the spec
// gives the OpenAPI schema the API server validates and the spec's TypeScript type.

import type { KindRef } from './index.js';

/** A field's schema; `T` is its value's type, `O` whether it may be absent. */
export declare class Schema<T, O extends boolean = false> {
  /** Type-level only: the value's type. */
  readonly __type: T;
  readonly __optional: O;
  optional(): Schema<T, true>;
  default(value: T): Schema<T, false>;
  description(text: string): this;
  enum<const V extends readonly T[]>(values: V): Schema<V[number], O>;
  json(): Record<string, unknown>;
}

export declare class StringSchema<T extends string = string, O extends boolean = false> extends Schema<T, O> {
  optional(): StringSchema<T, true>;
  default(value: T): StringSchema<T, false>;
  minLength(n: number): this;
  maxLength(n: number): this;
  pattern(regex: string | RegExp): this;
  format(format: string): this;
}

export declare class NumberSchema<O extends boolean = false> extends Schema<number, O> {
  optional(): NumberSchema<true>;
  default(value: number): NumberSchema<false>;
  min(n: number): this;
  max(n: number): this;
  gt(n: number): this;
  lt(n: number): this;
  multipleOf(n: number): this;
  format(format: string): this;
}

export declare class ArraySchema<T, O extends boolean = false> extends Schema<T[], O> {
  optional(): ArraySchema<T, true>;
  default(value: T[]): ArraySchema<T, false>;
  minItems(n: number): this;
  maxItems(n: number): this;
  unique(): this;
}

export declare class ObjectSchema<T, O extends boolean = false> extends Schema<T, O> {
  optional(): ObjectSchema<T, true>;
  default(value: T): ObjectSchema<T, false>;
  minProperties(n: number): this;
  maxProperties(n: number): this;
}

/** The value type a schema describes: `Infer<typeof spec>`. */
export type Infer<S> = S extends Schema<infer T, boolean> ? T : never;

type Shape = Record<string, Schema<any, boolean>>;
type Flatten<T> = { [K in keyof T]: T[K] };
/** An object of `P`'s fields; those marked `optional()` may be absent. */
export type ObjectOf<P extends Shape> = Flatten<
  { [K in keyof P as P[K] extends Schema<any, true> ? never : K]: Infer<P[K]> } & {
    [K in keyof P as P[K] extends Schema<any, true> ? K : never]?: Infer<P[K]>;
  }
>;

export declare const s: {
  string(): StringSchema;
  integer(): NumberSchema;
  int32(): NumberSchema;
  int64(): NumberSchema;
  number(): NumberSchema;
  boolean(): Schema<boolean>;
  enum<const V extends readonly string[]>(values: V): StringSchema<V[number]>;
  array<T>(items: Schema<T, boolean>): ArraySchema<T>;
  object<P extends Shape>(shape: P): ObjectSchema<ObjectOf<P>>;
  record<T>(values: Schema<T, boolean>): ObjectSchema<Record<string, T>>;
  any(): Schema<unknown>;
  intOrString(): Schema<number | string>;
};

/** `+kubebuilder:printcolumn`: a column `kubectl get` shows. */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
  format?: string;
}

export interface CustomResourceOptions<Spec, Status> {
  group: string;
  version: string;
  kind: string;
  /** The lower-cased kind plus `s` unless given. */
  plural?: string;
  namespaced?: boolean;
  spec: ObjectSchema<Spec, boolean>;
  /** Also turns the status subresource on. */
  status?: ObjectSchema<Status, boolean>;
  shortNames?: string[];
  categories?: string[];
  printerColumns?: PrinterColumn[];
  served?: boolean;
  deprecated?: boolean;
}

/** One version of a custom kind. */
export declare class CustomResource<Spec = unknown, Status = unknown> {
  constructor(options: CustomResourceOptions<Spec, Status>);
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly spec: ObjectSchema<Spec, boolean>;
  readonly status: ObjectSchema<Status, boolean> | undefined;
  /** The kind, for a manifest's parent. */
  readonly kindRef: KindRef;
  /** The version's `openAPIV3Schema`. */
  schema(): Record<string, unknown>;
  /** The CRD of this one version, as JSON text for a manifest's `crds`. */
  crd(): string;
}

/** The spec type of a `CustomResource`. */
export type SpecOf<R> = R extends CustomResource<infer Spec, any> ? Spec : never;
/** The status type of a `CustomResource`. */
export type StatusOf<R> = R extends CustomResource<any, infer Status> ? Status : never;

/** The CRD of one kind in several versions, `storage` naming the stored one. */
export declare function crd(versions: CustomResource<any, any>[], options?: { storage?: string }): string;
