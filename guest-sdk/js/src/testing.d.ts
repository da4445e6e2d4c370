import { AssertionError } from 'node:assert';
import type { Event, Exported, JsonObject, KubeObject, KindRef, Manifest, Query, RequestFields } from './index.js';

export const NOW: string;

/** The host would refuse this plugin's manifest or answer; the message says why. */
export class HostWouldRefuse extends AssertionError {}

/** What the plugin answered, decoded from the wire form and checked. */
export class Outcome {
  children: KubeObject[];
  status: JsonObject | undefined;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  requeueAfterMs: number | undefined;
  events: Event[];
  finalized: boolean;
  /** Lines the plugin logged during the call. */
  logs: { level: string; message: string; fields: [string, string][] }[];
  childrenOf(kind: KindRef): KubeObject[];
  /** The desired child of `kind` named `name`; fails the test when absent. */
  child(kind: KindRef, name: string): KubeObject;
  warnings(): Event[];
}

export function describe(reconciler: Exported): Manifest;
export function related(reconciler: Exported, parent: JsonObject): Query[];
export function reconcile(
  reconciler: Exported,
  parent: JsonObject,
  options?: { children?: JsonObject[]; related?: JsonObject[]; finalizing?: boolean; now?: string; config?: unknown } & Partial<RequestFields>,
): Outcome;
