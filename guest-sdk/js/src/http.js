// Outbound HTTP, within what the operator granted: `fetch`'s arguments and response over
// the contract's `http.send` import, for both engines.
//
//   const res = http.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(msg) });
//   if (!res.ok) throw new RetryableError(`${url}: HTTP ${res.status}`);
//   const answer = res.json();
//
// Synchronous: QuickJS runs a call to its end without an event loop, so `http.fetch`
// returns the response itself, and its `text()`, `json()`, `arrayBuffer()` and `bytes()`
// return the body itself, not Promises. (StarlingMonkey's global `fetch` goes through
// `wasi:http`, which the host serves with the same grant.)
//
// A request is sent only when its URL is allowed both by the manifest's `outbound` and by
// the operator's grant (`[http] allow`); otherwise, and when the host has no response for
// it, the call throws an `HttpRequestError` whose message is the host's reason (for a
// denied URL, the setting that would allow it). Each is a `ReconcileError`, retryable when
// sending again later may succeed: one the plugin does not catch reaches the host as the
// call's error. In native tests (`@kubewasm/sdk/testing`) requests are answered from
// canned responses and recorded.

import { ReconcileError } from './errors.js';
import { decodeUtf8, encodeUtf8 } from './utf8.js';

/** A request that got no response: `kind` is why (`denied`, `timeout`, `too-large`,
 * `too-many-requests`, `failed`), `reason` the host's own words, naming the URL's origin
 * (for a denied URL, the setting that would allow it). Retryable for `timeout` and
 * `failed`: sending again later may succeed. */
export class HttpRequestError extends ReconcileError {
  constructor(kind, reason) {
    super(`HTTP request ${kind}: ${reason}`, kind === 'timeout' || kind === 'failed');
    this.kind = kind;
    this.reason = reason;
  }
}

/** The cases of the contract's `http-error`. */
export const ERROR_KINDS = ['denied', 'timeout', 'too-large', 'too-many-requests', 'failed'];

/** Header names and values; names match in any case. The fetch API's `Headers`, with
 * names kept lower-case. */
export class Headers {
  constructor(init) {
    this.pairs = [];
    if (init instanceof Headers) this.pairs = init.pairs.map(([k, v]) => [k, v]);
    else if (Array.isArray(init)) for (const [k, v] of init) this.append(k, v);
    else if (init !== undefined && init !== null) for (const [k, v] of Object.entries(init)) this.append(k, v);
  }

  append(name, value) {
    this.pairs.push([String(name).toLowerCase(), String(value)]);
  }

  set(name, value) {
    this.delete(name);
    this.append(name, value);
  }

  delete(name) {
    const key = String(name).toLowerCase();
    this.pairs = this.pairs.filter(([k]) => k !== key);
  }

  has(name) {
    const key = String(name).toLowerCase();
    return this.pairs.some(([k]) => k === key);
  }

  /** The values of `name` joined with `, `, or `null`. */
  get(name) {
    const key = String(name).toLowerCase();
    const values = this.pairs.filter(([k]) => k === key).map(([, v]) => v);
    return values.length === 0 ? null : values.join(', ');
  }

  /** Each name once, sorted, with its values joined (as the fetch API iterates). */
  *entries() {
    for (const name of [...new Set(this.pairs.map(([k]) => k))].sort()) yield [name, this.get(name)];
  }

  *keys() {
    for (const [k] of this.entries()) yield k;
  }

  *values() {
    for (const [, v] of this.entries()) yield v;
  }

  forEach(f, thisArg) {
    for (const [k, v] of this.entries()) f.call(thisArg, v, k, this);
  }

  [Symbol.iterator]() {
    return this.entries();
  }
}

/** A response, whatever its status: the fetch API's `Response`, its body read at once. */
export class HttpResponse {
  constructor({ status, headers = [], body = new Uint8Array(0), url = '' }) {
    this.status = status;
    this.statusText = '';
    this.headers = headers instanceof Headers ? headers : new Headers(headers);
    this.url = url;
    /** The host follows redirects itself; the final response is all a plugin sees. */
    this.redirected = false;
    this.type = 'basic';
    this.bodyUsed = false;
    this.body = null;
    this.content = new Uint8Array(body);
  }

  /** Whether the status is 2xx. */
  get ok() {
    return this.status >= 200 && this.status < 300;
  }

  bytes() {
    this.bodyUsed = true;
    return new Uint8Array(this.content);
  }

  arrayBuffer() {
    return this.bytes().buffer;
  }

  text() {
    this.bodyUsed = true;
    return decodeUtf8(this.content);
  }

  /** The body parsed as JSON; a body that is not JSON is a `ReconcileError` (permanent)
   * naming the URL. */
  json() {
    const text = this.text();
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new ReconcileError(`${this.url}: the response is not JSON: ${e.message}`);
    }
  }

  clone() {
    return new HttpResponse({ status: this.status, headers: new Headers(this.headers), body: this.content, url: this.url });
  }
}

/** A request as the host receives it: what `@kubewasm/sdk/testing` records. */
export class HttpRequest {
  constructor({ method, url, headers = [], body = new Uint8Array(0), timeoutMs = undefined }) {
    this.method = method;
    this.url = url;
    /** Names and values, in order; a name may repeat. */
    this.headers = headers.map(([k, v]) => [k, v]);
    this.body = new Uint8Array(body);
    this.timeoutMs = timeoutMs ?? undefined;
  }

  /** The first value of header `name` (any case), or `undefined`. */
  header(name) {
    const key = String(name).toLowerCase();
    return this.headers.find(([k]) => k.toLowerCase() === key)?.[1];
  }

  text() {
    return decodeUtf8(this.body);
  }

  json() {
    return JSON.parse(this.text());
  }
}

function noNetwork(request) {
  const error = new Error(`${request.method} ${request.url}: no network outside a component`);
  error.payload = {
    tag: 'denied',
    val: `${request.method} ${request.url}: no network outside a component; @kubewasm/sdk/testing answers requests from canned responses (\`http: [...]\`)`,
  };
  throw error;
}

/** Where WIT requests go: the contract's import in the component (the build's entry
 * sets it), canned responses in native tests. As the engines call an import whose result
 * is an error, the transport throws an Error whose `payload` is the `http-error`. */
let transport = noNetwork;

/** Routes requests to `send`, the contract's import or a test's canned responses;
 * returns the transport it replaces. */
export function useTransport(send) {
  const previous = transport;
  transport = send;
  return previous;
}

/** Sends one request as it is (`{ method, url, headers: [[name, value]], body:
 * Uint8Array, timeoutMs }`) and returns its response, whatever its status; throws the
 * `HttpRequestError` of the host's reason when there is none. */
export function send(request) {
  const wire = {
    method: request.method ?? 'GET',
    url: String(request.url),
    headers: (request.headers ?? []).map(([k, v]) => [String(k), String(v)]),
    body: new Uint8Array(request.body ?? []),
    timeoutMs: request.timeoutMs ?? undefined,
  };
  let answer;
  try {
    answer = transport(wire);
  } catch (e) {
    const error = e?.payload;
    if (error && ERROR_KINDS.includes(error.tag)) throw new HttpRequestError(error.tag, String(error.val));
    throw e;
  }
  return new HttpResponse({ status: answer.status, headers: answer.headers, body: answer.body, url: wire.url });
}

function bodyBytes(body, headers) {
  if (body === undefined || body === null) return new Uint8Array(0);
  if (typeof body === 'string') {
    if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
    return encodeUtf8(body);
  }
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError(`fetch: a body is a string, a Uint8Array or an ArrayBuffer, not ${typeof body} (JSON.stringify an object)`);
}

/**
 * `fetch(input, init)`, synchronously: `input` is a URL (a string, or an object with
 * `href` or `url`), `init` takes `method`, `headers` (an object, pairs or `Headers`),
 * `body` (a string, sent as UTF-8 with a text `content-type` unless one is given, a
 * `Uint8Array` or an `ArrayBuffer`) and `timeoutMs` (lowered to the host's own). Returns
 * the `HttpResponse`.
 */
export function fetch(input, init = {}) {
  const url = typeof input === 'string' ? input : (input?.href ?? input?.url);
  if (typeof url !== 'string') throw new TypeError('fetch: give the URL as a string');
  const headers = new Headers(init.headers ?? input?.headers);
  const body = bodyBytes(init.body ?? input?.body, headers);
  const method = String(init.method ?? input?.method ?? 'GET').toUpperCase();
  return send({ method, url, headers: headers.pairs, body, timeoutMs: init.timeoutMs });
}
