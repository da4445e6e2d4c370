/// <reference path="./text.d.ts" />
/// <reference path="./wit/plugin.d.ts" />
// Types of @kubewasm/sdk. The contract's own records (what `plugin()` exports) are
// generated from wit/ by `jco guest-types` into ./wit (`npm run wit-types`).

import type * as wit from 'kubewasm:reconciler/reconciler@0.2.0';
import type * as info from 'kubewasm:reconciler/plugin-info@0.2.0';
import type * as handler from 'kubewasm:reconciler/handler@0.2.0';
import type * as admission from 'kubewasm:reconciler/admission@0.2.0';
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

/** A condition as `status.conditions` holds it (apimachinery's `metav1.Condition`). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  /** RFC 3339, to the second. */
  lastTransitionTime: string;
}

/** A condition to `setStatusCondition`: a boolean status is `True` or `False`. */
export interface NewCondition {
  type: string;
  status: boolean | 'True' | 'False' | 'Unknown';
  /** `UpperCamelCase`: letters, digits, `_`, `,` and `:`; the API server requires one. */
  reason: string;
  message?: string;
  /** The parent's `metadata.generation` this condition was decided from. */
  observedGeneration?: number;
  /** Used only when the condition is added or its status changes; `now` otherwise. */
  lastTransitionTime?: Date | string;
}

/** A copy of the conditions of an observed status (`parent.status`), to start from. */
export function conditionsFromStatus(status: unknown): Condition[];
/** Sets the condition of its type in place, as apimachinery's `meta.SetStatusCondition`:
 * `lastTransitionTime` moves to `now` only when the status changes; reason, message and
 * `observedGeneration` are overwritten. Whether the list changed. */
export function setStatusCondition(conditions: Condition[], condition: NewCondition, now: Date | string): boolean;
export function findStatusCondition(conditions: Condition[], type: string): Condition | undefined;
/** Removes every condition of `type`, keeping the order of the rest; whether one was there. */
export function removeStatusCondition(conditions: Condition[], type: string): boolean;
export function isStatusConditionTrue(conditions: Condition[], type: string): boolean;
/** Present and `False` (an absent condition is neither true nor false). */
export function isStatusConditionFalse(conditions: Condition[], type: string): boolean;

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

/** What happened to a watched object. */
export const Change: { readonly Added: 'added'; readonly Updated: 'updated'; readonly Deleted: 'deleted' };
export type Change = (typeof Change)[keyof typeof Change];

/** The fields of the contract's object event that reach a plugin as they were sent. */
export type ObjectEventFields = Omit<contract.ObjectEvent, 'change' | 'kind' | 'object' | 'oldObject' | 'now' | 'config'>;

/** One change of one watched object, as `handle` receives it: every field of the
 * contract's record, the objects and the settings parsed from JSON, the time as
 * `nowRfc3339`. Throw a `RetryableError` to have it delivered again with backoff (the
 * object's later changes wait behind it), or a `PermanentError` to drop it. */
export interface ObjectEvent extends ObjectEventFields {}
export class ObjectEvent {
  change: Change;
  /** The object's kind, as the manifest's watch names it. */
  kind: KindRef;
  /** The object now (added, updated) or as last known (deleted). */
  object: KubeObject;
  /** Updated: the object before the change (after a host restart only its metadata). */
  oldObject: KubeObject | undefined;
  initial: boolean;
  finalStateUnknown: boolean;
  /** `<uid>:<resourceVersion>:<change>`: the same on every retry and after restarts. */
  deliveryId: string;
  /** 1 on the first delivery, counting up on retries. */
  attempt: number;
  nowRfc3339: string;
  /** The plugin's settings (`null` if none), Secret references resolved. */
  config: any;
  /** The host's current time (the sandbox has no clock). */
  readonly now: Date;
}

/** A kind whose changes the plugin's `handle` receives, object by object. */
export class Watch {
  constructor(kind: KindRef, selectors?: { labelSelector?: string; fieldSelector?: string });
  readonly kind: KindRef;
  /** Only objects whose labels match (`app=web,tier notin (db)`). */
  readonly labelSelector: string | undefined;
  /** Only objects whose fields match (`metadata.name=web`). */
  readonly fieldSelector: string | undefined;
}

export interface Limits {
  /** CPU deadline for one call, in milliseconds (the host's default is 1000). */
  deadlineMs?: number;
  /** Largest memory the plugin may grow to, in MiB (the host's default is 64). */
  memoryMib?: number;
}

export class ManifestError extends Error {}

export interface ManifestOptions {
  children?: KindRef[];
  related?: KindRef[];
  finalizer?: boolean;
  crds?: string[];
  limits?: Limits;
  /** Kinds whose added, updated and deleted objects `handle` receives. */
  watches?: Watch[];
  /** URLs the plugin needs to reach (`https://hooks.slack.com`,
   * `http://*.svc.cluster.local:8080`); the operator must grant them too. */
  outbound?: string[];
  /** Child kinds whose observed children an answer may leave out: those it omits are
   * kept, not deleted (a CronJob's running Jobs). Each must be among `children`. */
  keepUnlisted?: KindRef[];
  /** The writes `default` may change before they are stored (a mutating webhook). */
  defaults?: AdmissionRule[];
  /** The writes `validate` may refuse (a validating webhook). */
  validates?: AdmissionRule[];
  /** Whether `convert` converts the parent between the versions its CRD (among `crds`)
   * serves (a conversion webhook). */
  converts?: boolean;
}

/** What a plugin reconciles, owns, reads, handles and reaches: returned by `describe`. */
export class Manifest {
  constructor(name: string, parent: KindRef | undefined, options?: ManifestOptions);
  /** A plugin that reconciles nothing: it handles the changes of the kinds it watches,
   * or admits the writes it defaults and validates (a policy). */
  static handler(name: string, options?: Pick<ManifestOptions, 'crds' | 'limits' | 'watches' | 'outbound' | 'defaults' | 'validates'>): Manifest;
  name: string;
  /** The kind it reconciles; `undefined` for a plugin that only handles events. */
  parent: KindRef | undefined;
  children: KindRef[];
  related: KindRef[];
  finalizer: boolean;
  crds: string[];
  limits: Limits;
  watches: Watch[];
  outbound: string[];
  keepUnlisted: KindRef[];
  defaults: AdmissionRule[];
  validates: AdmissionRule[];
  converts: boolean;
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
  /** The `metadata.uid`s of observed children to delete, of any kind. */
  delete?: string[];
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
  delete: string[];
  child(obj: JsonObject): this;
  /** Keeps an observed child as it is: neither pruned nor written. */
  keep(observed: KubeObject | JsonObject): this;
  /** Deletes an observed child by its `metadata.uid`, whatever its kind (one kept unlisted too). */
  deleteChild(observed: KubeObject | JsonObject): this;
  label(key: string, value: string): this;
  annotation(key: string, value: string): this;
  event(event: Event): this;
}

export class Refusal extends Error {
  readonly plugin: string;
  readonly problems: string[];
}
/** The host's check of an answer (ported); throws a `Refusal` listing every problem. */
export function validate(manifest: Manifest, parent: unknown, response: Response, observed?: unknown[]): Response;

/** A write the API server asks about, as `AdmissionReview` spells it. */
export const Operation: { readonly Create: 'CREATE'; readonly Update: 'UPDATE'; readonly Delete: 'DELETE'; readonly Connect: 'CONNECT' };
export type Operation = (typeof Operation)[keyof typeof Operation];

/** The writes of one kind an admission export is asked about. */
export class AdmissionRule {
  /** `operations` of `kind`; none: creates and updates. */
  constructor(kind: KindRef, operations?: Operation[]);
  readonly kind: KindRef;
  readonly operations: Operation[];
  /** The operations asked about, the default filled in. */
  readonly effectiveOperations: Operation[];
  selects(kind: KindRef, operation: Operation): boolean;
}

/** Who asks for a write, as the API server authenticated them. */
export interface UserInfo {
  username: string;
  uid: string;
  groups: string[];
  /** The authenticator's extra attributes (scopes...). */
  extra: Record<string, string[]>;
}

/** The fields of the contract's admission request that reach a plugin as they were sent. */
export type AdmissionRequestFields = Omit<contract.AdmissionRequest, 'kind' | 'operation' | 'object' | 'oldObject' | 'userInfo' | 'options' | 'now' | 'config'>;

/** One write the API server asks about: every field of the contract's record, the
 * objects and settings parsed from JSON, the time as `nowRfc3339`. */
export interface AdmissionRequest extends AdmissionRequestFields {}
export class AdmissionRequest {
  /** The object's kind, in the version the rule names. */
  kind: KindRef;
  operation: Operation;
  /** The object as it would be stored; `undefined` on delete. Change it in place in
   * `default` and return nothing to store it so. */
  object: KubeObject | undefined;
  /** The stored object: update and delete. */
  oldObject: KubeObject | undefined;
  userInfo: UserInfo;
  /** The write's `CreateOptions`, `UpdateOptions` or `DeleteOptions` (`null` if none). */
  options: any;
  nowRfc3339: string;
  /** The plugin's settings (`null` if none). */
  config: any;
  /** The host's current time (the sandbox has no clock). */
  readonly now: Date;
}

/** One field a denial blames, as the API server's `Invalid` errors list them. */
export interface FieldCause {
  /** `spec.schedule`, `metadata.name`. */
  field: string;
  message: string;
  /** Kubernetes' cause type: `FieldValueInvalid`, `FieldValueRequired`... */
  reason: string;
}

/** Why a write is refused: throw one from `default` or `validate`. With field causes the
 * API server answers 422 Invalid naming the fields; without, 403 Forbidden. `message`
 * lists the causes as the API server does. */
export class Denial extends Error {
  constructor(message?: string, causes?: Array<Omit<FieldCause, 'reason'> & { reason?: string }>);
  readonly causes: FieldCause[];
  /** The message without the causes. */
  readonly summary: string;
  /** A refusal blaming `field`; `message` says why. */
  static invalid(field: string, message: string): Denial;
  /** Blames `field` too, with Kubernetes' cause type `reason` (`FieldValueInvalid`
   * unless given: `FieldValueRequired`, `FieldValueNotSupported`...). */
  field(field: string, message: string, reason?: string): this;
}

/** What validation decided about a write, with warnings for the client. */
export class Verdict {
  constructor(denied?: Denial, warnings?: string[]);
  denied: Denial | undefined;
  warnings: string[];
  readonly allowed: boolean;
  static allow(): Verdict;
  static deny(denial: Denial | string): Verdict;
  warning(warning: string): this;
}

/** How defaulting changes a written object. */
export type Mutation = { unchanged: true } | { object: JsonObject } | { patch: JsonPatchOperation[] };

/** One RFC 6902 operation. */
export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
}

/** What defaulting did to a written object, with warnings for the client. */
export class Defaulted {
  constructor(mutation: Mutation, warnings?: string[]);
  mutation: Mutation;
  warnings: string[];
  static unchanged(): Defaulted;
  /** Store `object` instead of the written one. */
  static object(object: JsonObject): Defaulted;
  /** Apply the RFC 6902 JSON `patch` to the written object. */
  static patch(patch: JsonPatchOperation[]): Defaulted;
  warning(warning: string): this;
}

/** What a plugin implements: `describe`, and `reconcile` (a reconciler), or `handle` (an
 * event handler), or both; and the admission its manifest declares. */
export interface Plugin {
  describe(): Manifest;
  reconcile?(request: Request): Response;
  related?(parent: KubeObject): Query[];
  /** Handles one change of a watched object; throw to fail it. */
  handle?(event: ObjectEvent): void;
  /** Completes a write the manifest's `defaults` select: change `request.object` in
   * place and return nothing, or return a `Defaulted`; throw a `Denial` to refuse it. */
  default?(request: AdmissionRequest): Defaulted | void;
  /** Allows a write the manifest's `validates` select (return nothing, or a `Verdict`
   * with warnings) or refuses it (throw a `Denial`, or return `Verdict.deny(...)`). */
  validate?(request: AdmissionRequest): Verdict | void;
  /** One object of the parent's kind in `desiredApiVersion` (`group/version`); throw a
   * `PermanentError` when it cannot be converted. */
  convert?(object: KubeObject, desiredApiVersion: string): JsonObject;
}

/** A reconciler. */
export interface Reconciler extends Plugin {
  reconcile(request: Request): Response;
}

/** An event handler. */
export interface Handler extends Plugin {
  handle(event: ObjectEvent): void;
}

export namespace http {
  /** A request that got no response: why, in the host's own words. Retryable for
   * `timeout` and `failed`. */
  class HttpRequestError extends ReconcileError {
    readonly kind: 'denied' | 'timeout' | 'too-large' | 'too-many-requests' | 'failed';
    /** The host's reason, naming the URL's origin (for a denied URL, the setting that
     * would allow it). */
    readonly reason: string;
  }
  const ERROR_KINDS: HttpRequestError['kind'][];
  /** Header names (kept lower-case) and values: the fetch API's `Headers`. */
  class Headers implements Iterable<[string, string]> {
    constructor(init?: Headers | [string, string][] | Record<string, string>);
    append(name: string, value: string): void;
    set(name: string, value: string): void;
    delete(name: string): void;
    has(name: string): boolean;
    /** The values of `name` joined with `, `, or `null`. */
    get(name: string): string | null;
    entries(): IterableIterator<[string, string]>;
    keys(): IterableIterator<string>;
    values(): IterableIterator<string>;
    forEach(f: (value: string, name: string, headers: Headers) => void, thisArg?: unknown): void;
    [Symbol.iterator](): IterableIterator<[string, string]>;
  }
  /** A response, whatever its status: the fetch API's `Response`, its body read at once
   * (the body methods return the body itself, not a Promise). */
  class HttpResponse {
    readonly status: number;
    readonly statusText: string;
    /** Whether the status is 2xx. */
    readonly ok: boolean;
    readonly headers: Headers;
    readonly url: string;
    readonly redirected: boolean;
    readonly bodyUsed: boolean;
    bytes(): Uint8Array;
    arrayBuffer(): ArrayBuffer;
    text(): string;
    /** The body parsed as JSON; a body that is not JSON is a permanent `ReconcileError`. */
    json(): any;
    clone(): HttpResponse;
  }
  /** A request as the host receives it: what `@kubewasm/sdk/testing` records. */
  class HttpRequest {
    readonly method: string;
    readonly url: string;
    readonly headers: [string, string][];
    readonly body: Uint8Array;
    readonly timeoutMs: number | undefined;
    /** The first value of header `name` (any case). */
    header(name: string): string | undefined;
    text(): string;
    json(): any;
  }
  interface FetchInit {
    method?: string;
    headers?: Headers | [string, string][] | Record<string, string>;
    /** A string (sent as UTF-8, with a text `content-type` unless one is given), bytes. */
    body?: string | Uint8Array | ArrayBuffer | ArrayBufferView | null;
    /** The request's timeout, lowered to the host's own. */
    timeoutMs?: number;
  }
  /** `fetch`, synchronously: QuickJS runs a call to its end without an event loop. Throws
   * an `HttpRequestError` when the host has no response. */
  function fetch(input: string | { href: string } | { url: string }, init?: FetchInit): HttpResponse;
  /** Sends one request as it is; throws an `HttpRequestError` when there is no response. */
  function send(request: { method?: string; url: string; headers?: [string, string][]; body?: Uint8Array; timeoutMs?: number }): HttpResponse;
}
export import HttpRequestError = http.HttpRequestError;

/** The contract's `plugin-info`, `reconciler`, `handler` and `admission` interfaces in one object; the
 * build's entry exports each interface of it (`componentExports`). */
export interface Exported {
  describe: typeof info.describe;
  related: typeof wit.related;
  reconcile: typeof wit.reconcile;
  handle: typeof handler.handle;
  default: typeof admission.default;
  validate: typeof admission.validate;
  convert: typeof admission.convert;
}

/** Exports `impl` (an object, or a class instantiated for each call) as the plugin:
 * `export const reconciler = plugin(impl)`. */
export function plugin(impl: Plugin | (new () => Plugin)): Exported;
