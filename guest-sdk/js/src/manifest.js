// The plugin's self-description: parent, owned children, related kinds, CRDs, limits.

import { debug, isDnsLabel } from './names.js';
import { KindRef } from './kinds.js';

const U32 = 2 ** 32 - 1;

/** A manifest the host would refuse to load; the message names the field. */
export class ManifestError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ManifestError';
  }
}

/**
 * What a plugin reconciles, owns and reads: returned by `describe`.
 *
 * `children` is an allow-list: an answer holding any other kind is refused and nothing is
 * written. `crds` holds CustomResourceDefinitions as YAML or JSON text (`import crd from
 * './crd.yaml'`: the build puts the file's text in the component, which has no files).
 * `limits` (`{ deadlineMs, memoryMib }`) are defaults the operator may lower.
 */
export class Manifest {
  constructor(name, parent, { children = [], related = [], finalizer = false, crds = [], limits = {} } = {}) {
    this.name = name;
    this.parent = parent;
    this.children = [...children];
    this.related = [...related];
    this.finalizer = finalizer;
    this.crds = [...crds];
    this.limits = { deadlineMs: limits.deadlineMs, memoryMib: limits.memoryMib };
  }

  get fieldManager() {
    return `kubewasm.${this.name}`;
  }

  get finalizerName() {
    return `kubewasm.io/${this.name}`;
  }

  /** What the host checks at load (but parsing the CRDs). Throws a `ManifestError`
   * naming the field. */
  check() {
    this.checkTypes();
    if (!isDnsLabel(this.name)) {
      throw new ManifestError(
        `name ${debug(this.name)} must be a DNS label (lower-case letters, digits and '-', at most 63)`,
      );
    }
    const kinds = [['parent', this.parent], ...this.children.map((k) => ['children', k]), ...this.related.map((k) => ['related', k])];
    for (const [where, k] of kinds) {
      if (!k.version || !k.kind || !k.plural) throw new ManifestError(`${where}: ${k} needs a version, a kind and a plural`);
    }
    if (this.limits.deadlineMs === 0 || this.limits.memoryMib === 0) {
      throw new ManifestError('limits: a deadline or memory limit of 0 leaves nothing to run');
    }
  }

  /** What the WIT record needs of each field, checked so that a mistake is named here
   * rather than trapping at the boundary. */
  checkTypes() {
    if (typeof this.name !== 'string') throw new ManifestError(`name: expected a string, found ${show(this.name)}`);
    if (!(this.parent instanceof KindRef)) throw new ManifestError(`parent: expected a KindRef, found ${show(this.parent)}`);
    for (const where of ['children', 'related']) {
      this[where].forEach((k, i) => {
        if (!(k instanceof KindRef)) throw new ManifestError(`${where}[${i}]: expected a KindRef, found ${show(k)}`);
      });
    }
    this.crds.forEach((crd, i) => {
      if (typeof crd !== 'string') throw new ManifestError(`crds[${i}]: expected YAML or JSON text, found ${typeof crd}`);
    });
    for (const limit of ['deadlineMs', 'memoryMib']) {
      const value = this.limits[limit];
      if (value !== undefined && value !== null && !(Number.isInteger(value) && value >= 0 && value <= U32)) {
        throw new ManifestError(`limits.${limit}: expected a whole number from 0 to ${U32}, found ${show(value)}`);
      }
    }
  }
}

function show(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
