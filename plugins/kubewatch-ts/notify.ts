// What kubewatch sends, byte for byte where kubewatch's handlers fix it: the message text
// (`pkg/event/event.go`), the generic webhook's JSON (`pkg/handlers/webhook`), the Slack
// incoming webhook's (`pkg/handlers/slackwebhook`, slack-go's `WebhookMessage`),
// Microsoft Teams' MessageCard (`pkg/handlers/msteam`), and a CloudEvent in HTTP binary
// mode (CloudEvents 1.0.2 `http-protocol-binding.md` §3.1) with kubewatch's data.

import type { Change } from '@kubewasm/sdk';

import type { CloudEvent, SlackWebhook } from './config.ts';

type Json = Record<string, unknown>;

/** One change as kubewatch describes it. */
export interface Notice {
  /** The kind (`Pod`). */
  kind: string;
  apiVersion: string;
  name: string;
  /** Empty for a cluster-scoped object. */
  namespace: string;
  /** `Created`, `Updated`, `Deleted`. */
  reason: string;
  /** The send time, RFC 3339. */
  time: string;
  /** The delivery id: the same on every retry. */
  id: string;
  change: Change;
  object: Json;
  oldObject: Json | undefined;
}

/** A request to send: `http.fetch(url, { method, headers, body })`. */
export interface Notification {
  url: string;
  method: 'POST';
  headers: [string, string][];
  body: string;
}

/** kubewatch's text: ``A `Pod` in namespace `default` has been `Created`:\n`nginx` ``. */
export function message(n: Notice): string {
  return `A \`${n.kind}\` in namespace \`${n.namespace}\` has been \`${n.reason}\`:\n\`${n.name}\``;
}

/** The reason kubewatch gives a change. */
export function reason(change: Change): string {
  return { added: 'Created', updated: 'Updated', deleted: 'Deleted' }[change];
}

/** kubewatch's status of the change, which picks the colour. */
function status(n: Notice): 'Normal' | 'Warning' | 'Danger' {
  return ({ added: 'Normal', updated: 'Warning', deleted: 'Danger' } as const)[n.change];
}

const post = (url: string, headers: [string, string][], body: string): Notification => ({ url, method: 'POST', headers, body });

/** The generic webhook: `{"eventmeta":{kind,name,namespace,reason},"text","time"}`. */
export function webhook(url: string, n: Notice): Notification {
  const message_ = {
    eventmeta: { kind: n.kind, name: n.name, namespace: n.namespace, reason: n.reason },
    text: message(n),
    time: n.time,
  };
  return post(url, [['Content-Type', 'application/json']], JSON.stringify(message_));
}

/** A Slack-compatible incoming webhook (Slack, Mattermost): slack-go's `WebhookMessage`,
 * whose empty `username`, `icon_emoji` and `channel` are left out. */
export function slack(config: SlackWebhook, n: Notice): Notification {
  const body: Json = {};
  if (config.username) body.username = config.username;
  if (config.emoji) body.icon_emoji = config.emoji;
  if (config.channel) body.channel = config.channel;
  Object.assign(body, { text: message(n), replace_original: false, delete_original: false });
  return post(config.slackwebhookurl, [['Content-Type', 'application/json']], JSON.stringify(body));
}

const TEAMS_COLOURS = { Normal: '2DC72D', Warning: 'DEFF22', Danger: '8C1A1A' };

/** A Microsoft Teams incoming webhook: the Office 365 connector MessageCard kubewatch
 * sends (Go's `json.Encoder` ends it with a newline). */
export function teams(url: string, n: Notice): Notification {
  const card = {
    '@type': 'MessageCard',
    '@context': 'http://schema.org/extensions',
    themeColor: TEAMS_COLOURS[status(n)],
    summary: 'kubewatch notification received',
    title: 'kubewatch',
    sections: [{ activityTitle: message(n), facts: null, markdown: true }],
  };
  return post(url, [['Content-Type', 'application/json']], `${JSON.stringify(card)}\n`);
}

/** A CloudEvent in HTTP binary mode: the attributes in `ce-` headers (the id is the
 * delivery id, so a receiver can drop a retry it already has), kubewatch's data as the
 * body, its media type as `Content-Type`. */
export function cloudevent(config: CloudEvent, n: Notice): Notification {
  const data = {
    operation: { added: 'create', updated: 'update', deleted: 'delete' }[n.change],
    kind: n.kind,
    clusterUid: config.clusteruid,
    description: message(n),
    apiVersion: n.apiVersion,
    obj: redact(n.object),
    oldObj: n.oldObject === undefined ? null : redact(n.oldObject),
  };
  const subject = n.namespace ? `${n.namespace}/${n.name}` : n.name;
  const headers: [string, string][] = [
    ['ce-specversion', '1.0'],
    ['ce-id', percentEncode(n.id)],
    ['ce-source', percentEncode(config.source)],
    ['ce-type', percentEncode(config.type)],
    ['ce-time', percentEncode(n.time)],
  ];
  if (subject) headers.push(['ce-subject', percentEncode(subject)]);
  headers.push(['Content-Type', 'application/json']);
  return post(config.url, headers, JSON.stringify(data));
}

const REDACTED = '[redacted by kubewatch]';
/** base64 of REDACTED: what `data` holds. */
const REDACTED_BASE64 = 'W3JlZGFjdGVkIGJ5IGt1YmV3YXRjaF0=';

/** A Secret's values, never sent: kubewatch replaces them (`pkg/redact`). */
export function redact(object: Json): Json {
  if (object.kind !== 'Secret') return object;
  const out = { ...object };
  for (const [field, value] of [['data', REDACTED_BASE64], ['stringData', REDACTED]]) {
    const map = out[field];
    if (typeof map === 'object' && map !== null && !Array.isArray(map)) {
      out[field] = Object.fromEntries(Object.keys(map).map((k) => [k, value]));
    }
  }
  return out;
}

/** A header value as CloudEvents' HTTP binding writes it (§3.1.3.2): space, `"`, `%` and
 * every byte outside printable ASCII as `%XY`. */
export function percentEncode(value: string): string {
  let out = '';
  for (const c of value) {
    const code = c.codePointAt(0) ?? 0;
    if (code >= 0x21 && code <= 0x7e && c !== '"' && c !== '%') out += c;
    else if (code < 0x80) out += `%${code.toString(16).toUpperCase().padStart(2, '0')}`;
    else {
      try {
        out += encodeURIComponent(c);
      } catch {
        out += '%EF%BF%BD'; // a lone surrogate: U+FFFD, as UTF-8 would carry it
      }
    }
  }
  return out;
}
