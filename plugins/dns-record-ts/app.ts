// `DnsRecord`: an operator of something outside the cluster. Each DnsRecord
// (`dns.kubewasm.io/v1alpha1`) is a record in a DNS HTTP API, created, kept as specified
// and deleted over HTTP; its status says what the API holds. The same plugin as
// plugins/dns-record, in TypeScript.
//
// The API (a test server in this repository's end-to-end tests; the shape of PowerDNS's
// or ExternalDNS's webhook providers, simplified):
//
// | request | answer |
// |---|---|
// | `GET {endpoint}/zones/{zone}/records/{name}/{type}` | `200 {"ttl","values","owner"}` with an `ETag`, or `404` |
// | `PUT` the same, `{"ttl","values","owner"}` (`If-Match` optional) | `200`/`201` with the new `ETag`; `412` when `If-Match` is stale |
// | `DELETE` the same | `204`, or `404` |
//
// every request with `Authorization: Bearer <token>`.
//
// Each reconcile reads, compares and writes only on a difference, so a converged record
// costs one GET; the record's identity is its zone, name and type, so a retry after a
// failure (or a crash between the write and the status) writes the same record again,
// never a second one. A record another owner wrote is not taken over, and not deleted: a
// finalizer deletes the record before its DnsRecord goes only when the record is this
// DnsRecord's. While the API cannot be reached, the status says so (`Synced` False,
// `RemoteUnavailable`) and the reconcile fails retryably, so the host backs off.

import {
  Event,
  HttpRequestError,
  KindRef,
  KubeObject,
  Manifest,
  NewCondition,
  PermanentError,
  Response,
  RetryableError,
  conditionsFromStatus,
  findStatusCondition,
  http,
  plugin,
  setStatusCondition,
} from '@kubewasm/sdk';

// The Rust plugin's CRD: the build puts the file's text in the component.
import CRD from '../dns-record/crd.yaml';

/** The custom resource's spec. */
interface RecordSpec {
  zone: string;
  name: string;
  type: string;
  ttl: number;
  values: string[];
}

/** The plugin's settings: where the API is and its token (a Secret reference in
 * `dns-record-ts.toml`: `token = { secretKeyRef = { name = "dns-api", key = "token" } }`). */
interface Config {
  endpoint: string;
  token: string;
}

/** A record as the API holds it. */
interface Remote {
  ttl: number;
  values: string[];
  owner: string;
}

/** How often a converged record is read again, to revert edits made in the API. */
const RESYNC_MS = 300_000;

/** The condition that says whether the API holds the record as specified. */
const SYNCED = 'Synced';

export const dnsRecords = plugin({
  describe() {
    return new Manifest('dns-record-ts', new KindRef('dns.kubewasm.io', 'v1alpha1', 'DnsRecord', 'dnsrecords'), {
      finalizer: true,
      crds: [CRD],
      // Wherever the operator's endpoint is; the operator grants which.
      outbound: ['http://*:*', 'https://*:*'],
    });
  },

  reconcile(request) {
    const parent = request.parent;
    let spec: RecordSpec;
    try {
      spec = readSpec(parent);
    } catch (e) {
      // Every write follows a spec read: one that cannot be read never named a record of
      // this DnsRecord's, and must not keep it from being deleted.
      if (request.finalizing && e instanceof PermanentError) return new Response({ finalized: true });
      throw e;
    }
    const config = readConfig(request.config);
    const api = new Api(config, recordUrl(config.endpoint, spec));
    const owner = parent.uid;

    if (request.finalizing) {
      api.deleteOwnedBy(owner);
      return new Response({ finalized: true });
    }

    const conditions = conditionsFromStatus(parent.status);
    const synced = (status: boolean, reason: string, message: string): NewCondition => ({ type: SYNCED, status, reason, message });
    const response = new Response({ requeueAfterMs: RESYNC_MS });
    let outcome: NewCondition;
    let version: string | null = null;
    try {
      const found = api.get();
      if (found === null) {
        version = api.put(spec, owner, null);
        response.event(Event.normal('RecordCreated', fqdn(spec)));
      } else if (found.remote.owner !== owner) {
        throw new Failed('conflict', found.remote.owner);
      } else if (sameRecord(found.remote, desired(spec, owner))) {
        version = found.etag;
      } else {
        version = api.put(spec, owner, found.etag);
        response.event(Event.normal('RecordUpdated', fqdn(spec)));
      }
      outcome = synced(true, 'RecordSynced', `${fqdn(spec)} holds ${spec.values.join(', ')}`);
    } catch (e) {
      if (!(e instanceof Failed)) throw e;
      version = null;
      if (e.kind === 'conflict') {
        const message = `${fqdn(spec)} is owned by ${JSON.stringify(e.message)}, not this DnsRecord; it is left alone`;
        response.event(Event.warning('RecordConflict', message));
        outcome = synced(false, 'RecordConflict', message);
      } else if (e.kind === 'unavailable') {
        // Said once in the status; then the reconcile fails, and the host backs off.
        if (findStatusCondition(conditions, SYNCED)?.reason === 'RemoteUnavailable') throw new RetryableError(e.message);
        response.event(Event.warning('RemoteUnavailable', e.message));
        response.requeueAfterMs = 1000;
        outcome = synced(false, 'RemoteUnavailable', e.message);
      } else {
        throw new PermanentError(e.message);
      }
    }
    setStatusCondition(conditions, outcome, request.now);
    response.status = {
      observedGeneration: parent.generation ?? null,
      fqdn: fqdn(spec),
      remoteVersion: version,
      conditions,
    };
    return response;
  },
});

function readSpec(parent: KubeObject): RecordSpec {
  return {
    zone: segment(parent, 'spec.zone'),
    name: segment(parent, 'spec.name'),
    type: parent.field('spec.type', 'string'),
    ttl: parent.field('spec.ttl', 'integer', 300),
    values: parent.field('spec.values', 'array').map((_: unknown, i: number) => parent.field(`spec.values[${i}]`, 'string')),
  };
}

/** A field that names one part of the record's URL: `.` and `..` would name another. */
function segment(parent: KubeObject, path: string): string {
  const value = parent.field(path, 'string');
  if (value === '.' || value === '..') throw new PermanentError(`${parent.describe()}: ${path}: ${JSON.stringify(value)} is not a DNS name`);
  return value;
}

function readConfig(config: unknown): Config {
  const { endpoint, token } = (config ?? {}) as Partial<Config>;
  if (typeof endpoint !== 'string' || typeof token !== 'string') {
    throw new PermanentError('settings: need endpoint and token, as strings');
  }
  return { endpoint, token };
}

/** `www.example.org.` */
function fqdn(spec: RecordSpec): string {
  return `${spec.name}.${spec.zone.replace(/\.+$/, '')}.`;
}

/** Each part of the record's identity is one path segment (`readSpec` refuses `.` and
 * `..`): a name holding `/` or `?` cannot reach another URL of the API. */
function recordUrl(endpoint: string, spec: RecordSpec): string {
  const [zone, name, type] = [spec.zone, spec.name, spec.type].map(encodeURIComponent);
  return `${endpoint.replace(/\/+$/, '')}/zones/${zone}/records/${name}/${type}`;
}

function desired(spec: RecordSpec, owner: string): Remote {
  return { ttl: spec.ttl, values: [...spec.values], owner };
}

function sameRecord(a: Remote, b: Remote): boolean {
  return a.ttl === b.ttl && a.owner === b.owner && a.values.length === b.values.length && a.values.every((v, i) => v === b.values[i]);
}

/** Why the API did not do what was asked: the record belongs to someone else
 * (`conflict`, the message its owner); the API cannot be reached, or answered 5xx, 429
 * or 412: later may work (`unavailable`); refused for good (401, 403, 400, a URL not
 * granted): the settings or the spec must change (`refused`). */
class Failed extends Error {
  constructor(
    readonly kind: 'conflict' | 'unavailable' | 'refused',
    message: string,
  ) {
    super(message);
  }
}

/** One record's URL in the API. */
class Api {
  constructor(
    readonly config: Config,
    readonly url: string,
  ) {}

  send(method: string, headers: [string, string][] = [], body?: string): http.HttpResponse {
    try {
      return http.fetch(this.url, { method, headers: [['Authorization', `Bearer ${this.config.token}`], ...headers], body });
    } catch (e) {
      if (!(e instanceof HttpRequestError)) throw e;
      throw new Failed(e.retryable ? 'unavailable' : 'refused', `the DNS API: ${e.kind}: ${e.reason}`);
    }
  }

  get(): { remote: Remote; etag: string | null } | null {
    const response = this.send('GET');
    if (response.status === 404) return null;
    if (response.status !== 200) throw answered('GET', this.url, response);
    let remote: Remote;
    try {
      remote = JSON.parse(response.text());
    } catch (e) {
      throw new Failed('unavailable', `GET ${this.url}: the answer is not a record: ${(e as Error).message}`);
    }
    if (typeof remote?.ttl !== 'number' || !Array.isArray(remote.values) || typeof remote.owner !== 'string') {
      throw new Failed('unavailable', `GET ${this.url}: the answer is not a record: ${response.text()}`);
    }
    return { remote, etag: response.headers.get('etag') };
  }

  put(spec: RecordSpec, owner: string, etag: string | null): string | null {
    const headers: [string, string][] = etag === null ? [] : [['If-Match', etag]];
    headers.push(['content-type', 'application/json']);
    const response = this.send('PUT', headers, JSON.stringify(desired(spec, owner)));
    if (response.status === 200 || response.status === 201) return response.headers.get('etag');
    throw answered('PUT', this.url, response);
  }

  /** Deletes the record if `owner` holds it: gone already, or another owner's, it is
   * left as it is. */
  deleteOwnedBy(owner: string): void {
    try {
      const found = this.get();
      if (found === null || found.remote.owner !== owner) return;
      const response = this.send('DELETE');
      if (![200, 204, 404].includes(response.status)) throw answered('DELETE', this.url, response);
    } catch (e) {
      if (!(e instanceof Failed)) throw e;
      throw e.kind === 'refused' ? new PermanentError(e.message) : new RetryableError(e.message);
    }
  }
}

function answered(method: string, url: string, response: http.HttpResponse): Failed {
  const status = response.status;
  const message = `${method} ${url}: the DNS API answered ${status}: ${response.text().trim()}`;
  return new Failed(status === 412 || status === 429 || status >= 500 ? 'unavailable' : 'refused', message);
}
