/// <reference path="./text.d.ts" />
/// <reference path="./wit/plugin.d.ts" />
// Types of @kubewasm/sdk. The contract's own records (what `plugin()` exports) are
// generated from wit/ by `jco guest-types` into ./wit (`npm run wit-types`).

import type * as wit from 'kubewasm:reconciler/reconciler@0.2.0';
import type * as info from 'kubewasm:reconciler/plugin-info@0.2.0';
import type * as handler from 'kubewasm:reconciler/handler@0.2.0';
import type * as contract from 'kubewasm:reconciler/types@0.2.0';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: any };

export class KindRef {
  constructor(group: string, version: string, kind: string, plural: string, namespaced?: boolean);
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /** `group/version`, or just `version` for the core group. */
  readonly apiVersion: string;
  /** Whether `obj` (a JSON object) is of this kind. */
  matches(obj: unknown): boolean;
  toString(): string;
}

/** The built-in kinds by name (generated from the API server's data). */
export * as kinds from './builtin-kinds.js';

export namespace log {
  type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
  type Fields = Record<string, unknown>;
  function log(level: Level, message: string, fields?: Fields): void;
  function trace(message: string, fields?: Fields): void;
  function debug(message: string, fields?: Fields): void;
  function info(message: string, fields?: Fields): void;
  function warn(message: string, fields?: Fields): void;
  function error(message: string, fields?: Fields): void;
}

/** A reconcile that could not decide; throw a `RetryableError` or a `PermanentError`. */
export class ReconcileError extends Error {
  constructor(message: string, retryable?: boolean);
  readonly retryable: boolean;
}
/** A transient failure: the host retries with backoff. */
export class RetryableError extends ReconcileError {
  constructor(message: string);
}
/** The parent (or the config) is wrong; retrying will not help until it changes. */
export class PermanentError extends ReconcileError {
  constructor(message: string);
}

export interface Limits {
  /** CPU deadline for one call, in milliseconds (the host's default is 1000). */
  deadlineMs?: number;
  /** Largest memory the plugin may grow to, in MiB (the host's default is 64). */
  memoryMib?: number;
}

export class ManifestError extends Error {}

/** What a plugin reconciles, owns and reads: returned by `describe`. */
export class Manifest {
  constructor(
    name: string,
    parent: KindRef,
    options?: { children?: KindRef[]; related?: KindRef[]; finalizer?: boolean; crds?: string[]; limits?: Limits },
  );
  name: string;
  parent: KindRef;
  children: KindRef[];
  related: KindRef[];
  finalizer: boolean;
  crds: string[];
  limits: Limits;
  readonly fieldManager: string;
  readonly finalizerName: string;
  /** What the host checks at load; throws a `ManifestError` naming the field. */
  check(): void;
}

/** The types `KubeObject.field` checks, and what each gives. */
export interface FieldTypes {
  string: string;
  integer: number;
  number: number;
  boolean: boolean;
  array: any[];
  object: JsonObject;
  any: any;
}

/** Any Kubernetes object: its JSON fields and accessors that tolerate missing fields. */
export class KubeObject {
  constructor(json?: JsonObject);
  [field: string]: any;
  readonly name: string;
  readonly namespace: string | undefined;
  readonly uid: string;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly generation: number | undefined;
  readonly creationTimestamp: Date | undefined;
  readonly deletionTimestamp: Date | undefined;
  readonly controllerUid: string | undefined;
  /** `"Kind namespace/name"`, for messages. */
  describe(): string;
  /** The value at `path` (`"spec.ports[0].port"`), checked to be of `type`; a missing or
   * mistyped field is a `PermanentError` naming it, unless a fallback is given. */
  field<T extends keyof FieldTypes = 'any'>(path: string, type?: T): FieldTypes[T];
  field<T extends keyof FieldTypes, F>(path: string, type: T, fallback: F): FieldTypes[T] | F;
  isControlledBy(owner: KubeObject): boolean;
  /** Metadata for a child: `name`, this object's namespace and labels. */
  childMeta(name: string): ChildMeta;
  /** Metadata for a child in `namespace` (a cluster-scoped parent's namespaced children). */
  childMetaIn(name: string, namespace: string): ChildMeta;
  objectReference(): Record<string, string>;
}

export interface ChildMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  [field: string]: any;
}

export const LabelOperator: { readonly In: 'In'; readonly NotIn: 'NotIn'; readonly Exists: 'Exists'; readonly DoesNotExist: 'DoesNotExist' };
export type LabelOperator = (typeof LabelOperator)[keyof typeof LabelOperator];

export class Requirement {
  constructor(key: string, operator: LabelOperator, values?: string[]);
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: string[];
  matches(labels: Record<string, string>): boolean;
}

export class Selector {
  constructor(options?: { names?: string[]; requirements?: Requirement[] });
  readonly names: string[] | undefined;
  readonly requirements: Requirement[] | undefined;
  static all(): Selector;
  static named(names: Iterable<string>): Selector;
  static labelled(requirements: Iterable<Requirement>): Selector;
}

/** Related objects wanted for one parent. */
export class Query {
  constructor(kind: KindRef, namespace?: string, selector?: Selector);
  readonly kind: KindRef;
  readonly namespace: string | undefined;
  readonly selector: Selector;
  static all(kind: KindRef, namespace?: string): Query;
  static named(kind: KindRef, namespace: string | undefined, names: Iterable<string>): Query;
  static labelled(kind: KindRef, namespace: string | undefined, labels: Record<string, string>): Query;
  /** Whether `obj` is one this query selects, as the host decides it. */
  matches(obj: unknown): boolean;
}

/** The fields of the contract's request that reach a plugin as they were sent. */
export type RequestFields = Omit<contract.Request, 'parent' | 'children' | 'related' | 'finalizing' | 'now' | 'config'>;

/** Everything a plugin needs to decide, for one parent: every field of the contract's
 * request, the objects and the settings parsed from JSON, the time as `nowRfc3339`. */
export interface Request extends RequestFields {}
export class Request {
  parent: KubeObject;
  children: KubeObject[];
  related: KubeObject[];
  finalizing: boolean;
  nowRfc3339: string;
  config: any;
  /** The host's current time (the sandbox has no clock). */
  readonly now: Date;
  childrenOf(kind: KindRef): KubeObject[];
  child(kind: KindRef, name: string): KubeObject | undefined;
  relatedOf(kind: KindRef): KubeObject[];
  findRelated(kind: KindRef, name: string, namespace?: string | null): KubeObject | undefined;
}

export const EventType: { readonly Normal: 'Normal'; readonly Warning: 'Warning' };
export type EventType = (typeof EventType)[keyof typeof EventType];

export class Event {
  constructor(type: EventType, reason: string, message: string);
  type: EventType;
  reason: string;
  message: string;
  static normal(reason: string, message: string): Event;
  static warning(reason: string, message: string): Event;
}

export interface ResponseFields {
  children?: JsonObject[];
  status?: JsonObject;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  requeueAfterMs?: number;
  events?: Event[];
  finalized?: boolean;
}

/** The plugin's decision for one parent; `children` is the FULL desired set. */
export class Response {
  constructor(fields?: ResponseFields);
  children: JsonObject[];
  status: JsonObject | undefined;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  requeueAfterMs: number | undefined;
  events: Event[];
  finalized: boolean;
  child(obj: JsonObject): this;
  /** Keeps an observed child as it is: neither pruned nor written. */
  keep(observed: KubeObject | JsonObject): this;
  label(key: string, value: string): this;
  annotation(key: string, value: string): this;
  event(event: Event): this;
}

export class Refusal extends Error {
  readonly plugin: string;
  readonly problems: string[];
}
/** The host's check of an answer (ported); throws a `Refusal` listing every problem. */
export function validate(manifest: Manifest, parent: unknown, response: Response): Response;

/** What a plugin implements. */
export interface Reconciler {
  describe(): Manifest;
  reconcile(request: Request): Response;
  related?(parent: KubeObject): Query[];
}

/** The contract's `plugin-info`, `reconciler` and `handler` interfaces in one object; the
 * build's entry exports each interface of it (`componentExports`). */
export interface Exported {
  describe: typeof info.describe;
  related: typeof wit.related;
  reconcile: typeof wit.reconcile;
  handle: typeof handler.handle;
}

/** Exports `impl` (an object, or a class instantiated for each call) as the plugin:
 * `export const reconciler = plugin(impl)`. */
export function plugin(impl: Reconciler | (new () => Reconciler)): Exported;
