import { AssertionError } from 'node:assert';
import type {
  AdmissionRequestFields,
  Change,
  Event,
  Exported,
  JsonObject,
  JsonPatchOperation,
  KubeObject,
  KindRef,
  Manifest,
  Mutation,
  ObjectEventFields,
  Operation,
  Query,
  RequestFields,
  UserInfo,
  Verdict,
  http,
} from './index.js';

export const NOW: string;

/** The host would refuse this plugin's manifest or answer; the message says why. */
export class HostWouldRefuse extends AssertionError {}

/** A line the plugin logged during the call. */
export interface Line {
  level: string;
  message: string;
  fields: [string, string][];
}

/** What the plugin answered, decoded from the wire form and checked. */
export class Outcome {
  children: KubeObject[];
  status: JsonObject | undefined;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  requeueAfterMs: number | undefined;
  events: Event[];
  finalized: boolean;
  /** The observed children the answer deletes by uid (`Response.deleteChild`). */
  deleted: KubeObject[];
  /** Lines the plugin logged during the call. */
  logs: Line[];
  /** The HTTP requests the plugin sent, in order, as the host would receive them. */
  requests: http.HttpRequest[];
  childrenOf(kind: KindRef): KubeObject[];
  /** The desired child of `kind` named `name`; fails the test when absent. */
  child(kind: KindRef, name: string): KubeObject;
  warnings(): Event[];
}

/** What an event handler did with one change. */
export interface Handled {
  /** The HTTP requests the plugin sent, in order, as the host would receive them. */
  requests: http.HttpRequest[];
  logs: Line[];
}

/** What the plugin's error, thrown by `reconcile` or `handle` as the host would receive
 * it, carries: what the call sent and logged before it failed
 * (`(e as RetryableError & Failure).requests`). */
export interface Failure {
  /** The HTTP requests the plugin sent, in order, as the host would receive them. */
  requests: http.HttpRequest[];
  logs: Line[];
}

/** A canned answer to one of the plugin's HTTP requests (see `reply`). */
export interface Reply {
  status: number;
  headers: Record<string, string> | [string, string][];
  body: unknown;
  url: string;
  method: string | undefined;
  error: { kind: http.HttpRequestError['kind']; reason: string } | undefined;
}

/** A canned answer to the first request whose method and URL (`*` for any text) match,
 * among those no earlier reply answered: a response, or the host's reason for none. */
export function reply(options?: Partial<Reply>): Reply;

export function describe(exported: Exported): Manifest;
export function related(exported: Exported, parent: JsonObject): Query[];
export function reconcile(
  exported: Exported,
  parent: JsonObject,
  options?: { children?: JsonObject[]; related?: JsonObject[]; finalizing?: boolean; now?: string; config?: unknown; http?: Reply[] } & Partial<RequestFields>,
): Outcome;
/** Delivers one change of a watched object to the plugin's handler, as the host does. */
export function handle(
  exported: Exported,
  change: Change,
  object: JsonObject,
  options?: { oldObject?: JsonObject; kind?: KindRef; initial?: boolean; finalStateUnknown?: boolean; deliveryId?: string; attempt?: number; now?: string; config?: unknown; http?: Reply[] } & Partial<ObjectEventFields>,
): Handled;

/** A write to ask the plugin's admission about. */
export type AdmissionOptions = {
  /** `Operation.Create` unless `oldObject` is given (then `Update`). */
  operation?: Operation;
  /** The stored object: update and delete. */
  oldObject?: JsonObject;
  /** The rule's kind; by default the manifest's rule that selects the object. */
  kind?: KindRef;
  userInfo?: Partial<UserInfo>;
  dryRun?: boolean;
  options?: unknown;
  now?: string;
  config?: unknown;
} & Partial<AdmissionRequestFields>;

/** What `default` did to a write. */
export interface DefaultedWrite {
  /** The object as the API server would store it. */
  object: KubeObject;
  /** What the plugin answered. */
  mutation: Mutation;
  warnings: string[];
  logs: Line[];
}

/** Runs `default` for a write of `object`, as the host does; throws the plugin's `Denial`. */
export function defaulted(exported: Exported, object: JsonObject, options?: AdmissionOptions): DefaultedWrite;
/** Runs `validate` for a write of `object` (the stored object for a delete), as the host does. */
export function validated(exported: Exported, object: JsonObject, options?: AdmissionOptions): Verdict & { logs: Line[] };
/** Converts `objects` to `desiredApiVersion` with `convert`, as the API server keeps them. */
export function converted(exported: Exported, objects: JsonObject[], desiredApiVersion: string, options?: { now?: string; config?: unknown }): KubeObject[];
/** `document` with the RFC 6902 JSON `patch` applied. */
export function applyPatch<T = unknown>(document: T, patch: JsonPatchOperation[]): T;
