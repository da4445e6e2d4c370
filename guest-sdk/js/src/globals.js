// The Web globals a plugin expects that QuickJS lacks, defined over the host: `crypto`
// (getRandomValues, randomUUID) and `Math.random` drawn from wasi:random, UTF-8
// `TextEncoder` and `TextDecoder`, and `structuredClone`. QuickJS seeds its own
// Math.random once, when the component is built (its state is a snapshot), so without
// this every call would draw the same sequence.
//
// Nothing here draws at import: code that runs at import runs when the component is built,
// and a value drawn then would be the same in every call.

import { decodeUtf8, decodeUtf8Prefix, encodeUtf8 } from './utf8.js';

/** The most bytes one getRandomValues call fills, as the Web Crypto API allows. */
const MAX_RANDOM_VALUES = 65536;

const INTEGER_ARRAYS = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  ...(typeof BigInt64Array === 'undefined' ? [] : [BigInt64Array, BigUint64Array]),
];

/** `crypto`, `Math.random`, `TextEncoder`, `TextDecoder` and `structuredClone`; the first
 * two over `randomBytes(n)`, a source of `n` cryptographically secure bytes (wasi:random's
 * get-random-bytes in the component). */
export function sandboxGlobals(randomBytes) {
  function getRandomValues(array) {
    if (!INTEGER_ARRAYS.some((type) => array instanceof type)) {
      throw new TypeError('crypto.getRandomValues: the argument must be an integer-typed array');
    }
    if (array.byteLength > MAX_RANDOM_VALUES) {
      throw new RangeError(
        `crypto.getRandomValues: ${array.byteLength} bytes asked for, at most ${MAX_RANDOM_VALUES} at a time`,
      );
    }
    new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(randomBytes(array.byteLength));
    return array;
  }

  function randomUUID() {
    const b = getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // the RFC 9562 variant
    const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  /** A number in [0, 1) of 53 random bits, as V8's and SpiderMonkey's are. Drawn afresh
   * each time, never from a pool: a pool filled by code that runs at import would be part
   * of the built component, the same in every call. */
  function random() {
    const b = randomBytes(7);
    const high = ((b[0] & 0x1f) << 16) | (b[1] << 8) | b[2]; // 21 bits
    const low = ((b[3] << 24) | (b[4] << 16) | (b[5] << 8) | b[6]) >>> 0; // 32 bits
    return (high * 2 ** 32 + low) / 2 ** 53;
  }

  return { crypto: { getRandomValues, randomUUID }, random, TextEncoder, TextDecoder, structuredClone };
}

/** Defines on `globalThis` what the engine lacks of sandboxGlobals(randomBytes), and makes
 * Math.random draw from it. */
export function useSandboxGlobals(randomBytes) {
  const globals = sandboxGlobals(randomBytes);
  Math.random = globals.random;
  for (const name of ['crypto', 'TextEncoder', 'TextDecoder', 'structuredClone']) {
    if (globalThis[name] === undefined) {
      Object.defineProperty(globalThis, name, { value: globals[name], writable: true, configurable: true });
    }
  }
}

/** The WHATWG Encoding standard's TextEncoder: UTF-8, a lone surrogate as U+FFFD. */
class TextEncoder {
  get encoding() {
    return 'utf-8';
  }

  encode(input = '') {
    return encodeUtf8(input);
  }

  /** Writes as many whole characters of `source` as fit in `destination`. */
  encodeInto(source, destination) {
    let read = 0;
    let written = 0;
    for (const c of String(source)) {
      const bytes = encodeUtf8(c);
      if (written + bytes.length > destination.length) break;
      destination.set(bytes, written);
      written += bytes.length;
      read += c.length;
    }
    return { read, written };
  }
}

const UTF8_LABELS = ['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8'];

/** The WHATWG Encoding standard's TextDecoder, for UTF-8 only: `fatal`, `ignoreBOM` and
 * `decode(bytes, { stream: true })` as the standard has them. */
class TextDecoder {
  #fatal;
  #ignoreBOM;
  #pending = new Uint8Array(0);
  #started = false;

  constructor(label = 'utf-8', options = {}) {
    if (!UTF8_LABELS.includes(String(label).trim().toLowerCase())) {
      throw new RangeError(`TextDecoder: the encoding ${label} is not supported here, only utf-8`);
    }
    this.#fatal = Boolean(options.fatal);
    this.#ignoreBOM = Boolean(options.ignoreBOM);
  }

  get encoding() {
    return 'utf-8';
  }

  get fatal() {
    return this.#fatal;
  }

  get ignoreBOM() {
    return this.#ignoreBOM;
  }

  decode(input = new Uint8Array(0), options = {}) {
    const stream = Boolean(options.stream);
    if (!ArrayBuffer.isView(input) && !(input instanceof ArrayBuffer)) {
      throw new TypeError('TextDecoder.decode: the input must be an ArrayBuffer or a view of one');
    }
    const fresh = ArrayBuffer.isView(input)
      ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength)
      : new Uint8Array(input);
    let bytes = fresh;
    if (this.#pending.length > 0) {
      bytes = new Uint8Array(this.#pending.length + fresh.length);
      bytes.set(this.#pending);
      bytes.set(fresh, this.#pending.length);
    }
    let text;
    let held;
    try {
      ({ text, held } = decodeUtf8Prefix(bytes, { fatal: this.#fatal }));
      if (!stream && held > 0) text += decodeUtf8(bytes.subarray(bytes.length - held), { fatal: this.#fatal });
    } catch (e) {
      // A fatal error ends the stream: the next call starts afresh, as in browsers and Node.
      this.#pending = new Uint8Array(0);
      this.#started = false;
      throw e;
    }
    this.#pending = stream ? bytes.slice(bytes.length - held) : new Uint8Array(0);
    if (!this.#started && text.length > 0) {
      // A byte order mark is dropped once, where the stream starts.
      this.#started = true;
      if (!this.#ignoreBOM && text.startsWith('\ufeff')) text = text.slice(1);
    }
    if (!stream) this.#started = false;
    return text;
  }
}

/** A DOMException named DataCloneError, as structuredClone throws in browsers and Node
 * (QuickJS has no DOMException). */
class DataCloneError extends Error {
  get name() {
    return 'DataCloneError';
  }
}

const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
const UNCLONABLE = [WeakMap, WeakSet, Promise, ...(typeof WeakRef === 'undefined' ? [] : [WeakRef])];

/** The HTML standard's structuredClone of what JavaScript itself defines: primitives, their
 * wrappers, Date, RegExp, ArrayBuffer and its views, Map, Set, errors, arrays and plain
 * objects, with shared and cyclic references kept; a function, a symbol or a WeakMap is a
 * DataCloneError. Nothing can be transferred. */
function structuredClone(value, options = {}) {
  if (options?.transfer !== undefined && [...options.transfer].length > 0) {
    throw new DataCloneError('structuredClone: transferring is not supported in the sandbox');
  }
  const memory = new Map();
  function clone(v) {
    if (typeof v === 'symbol') throw new DataCloneError(`structuredClone: ${String(v)} could not be cloned`);
    if (typeof v === 'function') throw new DataCloneError(`structuredClone: function ${v.name || '(anonymous)'} could not be cloned`);
    if (v === null || typeof v !== 'object') return v;
    if (memory.has(v)) return memory.get(v);
    const keep = (copy) => (memory.set(v, copy), copy);
    if (UNCLONABLE.some((type) => v instanceof type)) {
      throw new DataCloneError(`structuredClone: a ${v.constructor.name} could not be cloned`);
    }
    for (const Wrapper of [Boolean, Number, String, BigInt]) {
      if (v instanceof Wrapper) return keep(Object(Wrapper.prototype.valueOf.call(v)));
    }
    if (v instanceof Date) return keep(new Date(v.getTime()));
    if (v instanceof RegExp) return keep(new RegExp(v.source, v.flags));
    if (v instanceof ArrayBuffer) return keep(v.slice(0));
    if (ArrayBuffer.isView(v)) {
      const buffer = clone(v.buffer);
      const length = v instanceof DataView ? v.byteLength : v.length;
      return keep(new v.constructor(buffer, v.byteOffset, length));
    }
    if (v instanceof Map) {
      const copy = keep(new Map());
      for (const [key, entry] of v) copy.set(clone(key), clone(entry));
      return copy;
    }
    if (v instanceof Set) {
      const copy = keep(new Set());
      for (const entry of v) copy.add(clone(entry));
      return copy;
    }
    let copy;
    if (v instanceof Error) {
      const Type = Object.hasOwn(ERRORS, v.name) ? ERRORS[v.name] : Error;
      copy = keep(new Type(v.message));
      const own = (key, value) => Object.defineProperty(copy, key, { value, writable: true, configurable: true });
      if (typeof v.stack === 'string') own('stack', v.stack);
      if (Object.hasOwn(v, 'cause')) own('cause', clone(v.cause));
      return copy;
    }
    copy = keep(Array.isArray(v) ? new Array(v.length) : {});
    for (const key of Object.keys(v)) copy[key] = clone(v[key]);
    return copy;
  }
  return clone(value);
}
