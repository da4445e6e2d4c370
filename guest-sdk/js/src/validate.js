// The host's check of a plugin's answer, before anything is written: a refused answer
// writes nothing at all.
//
// A port of `kubewasm_contract::validate` (wit/contract/src/validate.rs), kept in
// step with it by a table of cases every implementation reads
// (wit/contract/tests/validate_cases.json): same verdict, same messages.

import { byteLength, compareUtf8, debug, isDnsSubdomain, isLabelValue, isQualifiedName } from './names.js';
import { isPlainObject } from './kinds.js';
import { Response } from './response.js';

/** Largest object a plugin may return (the API server's own limit is 1.5 MiB). */
export const MAX_OBJECT_BYTES = 1 << 20;
/** Largest whole response. */
export const MAX_RESPONSE_BYTES = 16 << 20;

/** A response the host refuses; `problems` lists every reason, not only the first. */
export class Refusal extends Error {
  constructor(plugin, problems) {
    super(`response of plugin ${plugin} refused: ${problems.join('; ')}`);
    this.name = 'Refusal';
    this.plugin = plugin;
    this.problems = problems;
  }
}

/**
 * Checks `response` (its children and status as JSON values) against what the plugin
 * declared and the parent it answers for, and returns it with each namespaced child's
 * namespace filled in from a namespaced parent. Every child must be of a declared kind,
 * named, in the parent's namespace (for a namespaced parent), unique and within size
 * limits. Every uid in `delete` must be that of one of the `observed` children (those the
 * request shows, JSON), and that child neither returned nor kept. Throws a `Refusal`
 * listing every problem found.
 */
export function validate(manifest, parent, response, observed = []) {
  const problems = [];
  let parentNs;
  if (manifest.parent.namespaced) {
    const ns = get(get(parent, 'metadata'), 'namespace');
    parentNs = typeof ns === 'string' ? ns : undefined;
  }
  const seen = new Set();
  let total = 0;
  const children = JSON.parse(JSON.stringify(response.children));

  children.forEach((child, i) => {
    const size = jsonSize(child);
    total += size;
    const meta = get(child, 'metadata');
    if (!isPlainObject(meta)) {
      problems.push(`child #${i} has no metadata`);
      return;
    }
    const name = str(meta.name);
    const namespace = typeof meta.namespace === 'string' ? meta.namespace : undefined;
    const apiVersion = get(child, 'apiVersion');
    const kindName = get(child, 'kind');
    const what = `child #${i} (${typeof apiVersion === 'string' ? apiVersion : '<no apiVersion>'} ${
      typeof kindName === 'string' ? kindName : '<no kind>'
    } ${debug(name)})`;
    const kind = manifest.children.find((k) => k.matches(child));
    if (kind === undefined) {
      const declared = manifest.children.map(String).join(', ') || 'none';
      problems.push(`${what} is of a kind the plugin did not declare in \`children\` (declared: ${declared})`);
      return;
    }
    if (!isDnsSubdomain(name)) problems.push(`${what} needs metadata.name, a DNS subdomain`);
    if (kind.namespaced && parentNs !== undefined && namespace === undefined) {
      meta.namespace = parentNs;
    } else if (kind.namespaced && parentNs !== undefined && namespace !== parentNs) {
      problems.push(`${what} is in namespace ${debug(namespace)}, outside its parent's namespace ${debug(parentNs)}`);
    } else if (kind.namespaced && parentNs === undefined && namespace === undefined) {
      problems.push(`${what} needs metadata.namespace (the parent is cluster-scoped)`);
    } else if (!kind.namespaced && parentNs !== undefined) {
      problems.push(`${what} is cluster-scoped and cannot be owned by a namespaced parent`);
    } else if (!kind.namespaced && parentNs === undefined && namespace !== undefined) {
      problems.push(`${what} is cluster-scoped but sets metadata.namespace`);
    }
    if (size > MAX_OBJECT_BYTES) problems.push(`${what} is ${size} bytes, over the limit of ${MAX_OBJECT_BYTES}`);
    const key = JSON.stringify([kind.kind, kind.group, str(meta.namespace), name]);
    if (seen.has(key)) problems.push(`${what} appears more than once`);
    seen.add(key);
  });
  const kept = new Set(children.map((c) => get(get(c, 'metadata'), 'uid')).filter((u) => typeof u === 'string'));
  (response.delete ?? []).forEach((uid, i) => {
    const child = uid === '' ? undefined : observed.find((o) => get(get(o, 'metadata'), 'uid') === uid);
    if (child === undefined) {
      problems.push(`delete #${i} (${debug(uid)}) is not the metadata.uid of an observed child the parent controls`);
      return;
    }
    const meta = get(child, 'metadata');
    const kindName = get(child, 'kind');
    const what = `delete #${i} (${typeof kindName === 'string' ? kindName : '<no kind>'} ${debug(str(meta.name))})`;
    const kind = manifest.children.find((k) => k.matches(child));
    const returned = kind !== undefined && seen.has(JSON.stringify([kind.kind, kind.group, str(meta.namespace), str(meta.name)]));
    if (returned || kept.has(uid)) problems.push(`${what} is also among the children: an answer returns or deletes a child, not both`);
  });

  if (response.status !== undefined && response.status !== null) {
    const size = jsonSize(response.status);
    total += size;
    if (!isPlainObject(response.status)) problems.push('status must be a JSON object');
    if (size > MAX_OBJECT_BYTES) problems.push(`status is ${size} bytes, over the limit of ${MAX_OBJECT_BYTES}`);
  }
  for (const [key, value] of sorted(response.labels)) {
    if (!isQualifiedName(key) || !isLabelValue(value)) problems.push(`label ${key}=${debug(value)} is not a valid Kubernetes label`);
  }
  for (const [key, value] of sorted(response.annotations)) {
    total += byteLength(key) + byteLength(value);
    if (!isQualifiedName(key)) problems.push(`annotation key ${debug(key)} is not a valid Kubernetes key`);
  }
  for (const event of response.events) {
    if (!event.reason) problems.push(`event ${debug(event.message)} has no reason`);
  }
  if (total > MAX_RESPONSE_BYTES) problems.push(`response is ${total} bytes, over the limit of ${MAX_RESPONSE_BYTES}`);

  if (problems.length > 0) throw new Refusal(manifest.name, problems);
  return new Response({ ...response, children });
}

/** Bytes of `value` as compact JSON, as the host measures it (serde_json). */
export function jsonSize(value) {
  return byteLength(JSON.stringify(value));
}

function sorted(map) {
  // As Rust's BTreeMap<String, _> orders keys.
  return Object.entries(map ?? {}).sort(([a], [b]) => compareUtf8(a, b));
}

function get(value, key) {
  return isPlainObject(value) ? value[key] : undefined;
}

function str(value) {
  return typeof value === 'string' ? value : '';
}
