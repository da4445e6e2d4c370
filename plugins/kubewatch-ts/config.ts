// The plugin's settings: kubewatch's own configuration (`.kubewatch.yaml`, or the Helm
// chart's values) in the `[config]` of `kubewatch-ts.toml`, so an existing one can be
// carried over. Unlike kubewatch, every handler configured is notified, not only the
// first.

import { PermanentError } from '@kubewasm/sdk';

/** The generic webhook. */
export interface Webhook {
  url: string;
}

/** A Slack-compatible incoming webhook. */
export interface SlackWebhook {
  slackwebhookurl: string;
  channel: string;
  username: string;
  emoji: string;
}

/** A Microsoft Teams incoming webhook. */
export interface MsTeams {
  webhookurl: string;
}

/** A CloudEvents receiver (binary mode). */
export interface CloudEvent {
  url: string;
  /** `ce-source`; default kubewatch's `https://github.com/aantn/kubewatch`. */
  source: string;
  /** `ce-type`; default kubewatch's `KUBERNETES_TOPOLOGY_CHANGE`. */
  type: string;
  /** The data's `clusterUid`. */
  clusteruid: string;
}

/** The handlers to notify; any number of them. */
export interface Handlers {
  webhook?: Webhook;
  slackwebhook?: SlackWebhook;
  msteams?: MsTeams;
  cloudevent?: CloudEvent;
  /** kubewatch's other handlers (slack, hipchat, mattermost, flock, smtp, lark): not
   * supported here; logged. */
  unsupported: string[];
}

/** kubewatch's configuration, as far as this plugin reads it. */
export interface Config {
  handler: Handlers;
  /** `deployment = true`, `pod = true`...: the kinds to notify of (none by default, as
   * in kubewatch). */
  resource: Record<string, boolean>;
  /** Notify of objects in this namespace only (cluster-scoped kinds always); empty: all.
   * (The host's own `namespace` setting watches one namespace, which costs less.) */
  namespace: string;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function section(parent: Json, key: string, where: string): Json | undefined {
  const value = parent[key];
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new PermanentError(`settings: ${where}${key}: expected a table`);
  return value;
}

function text(table: Json, key: string, where: string, fallback?: string): string {
  const value = table[key];
  if (value === undefined || value === null) {
    if (fallback !== undefined) return fallback;
    throw new PermanentError(`settings: ${where}${key}: missing`);
  }
  if (typeof value !== 'string') throw new PermanentError(`settings: ${where}${key}: expected a string`);
  return value;
}

const SUPPORTED = ['webhook', 'slackwebhook', 'msteams', 'cloudevent'];

/** The configuration in `settings` (the plugin's `[config]`); a field of the wrong type,
 * or a handler without its URL, is a permanent error naming it. */
export function readConfig(settings: unknown): Config {
  const root = isObject(settings) ? settings : {};
  const handler = section(root, 'handler', '') ?? {};
  const at = 'handler.';
  const webhook = section(handler, 'webhook', at);
  const slack = section(handler, 'slackwebhook', at);
  const teams = section(handler, 'msteams', at);
  const cloudevent = section(handler, 'cloudevent', at);
  const resource: Record<string, boolean> = {};
  for (const [key, on] of Object.entries(section(root, 'resource', '') ?? {})) {
    if (typeof on !== 'boolean') throw new PermanentError(`settings: resource.${key}: expected true or false`);
    resource[key] = on;
  }
  return {
    handler: {
      webhook: webhook && { url: text(webhook, 'url', `${at}webhook.`) },
      slackwebhook: slack && {
        slackwebhookurl: text(slack, 'slackwebhookurl', `${at}slackwebhook.`, ''),
        channel: text(slack, 'channel', `${at}slackwebhook.`, ''),
        username: text(slack, 'username', `${at}slackwebhook.`, ''),
        emoji: text(slack, 'emoji', `${at}slackwebhook.`, ''),
      },
      msteams: teams && { webhookurl: text(teams, 'webhookurl', `${at}msteams.`) },
      cloudevent: cloudevent && {
        url: text(cloudevent, 'url', `${at}cloudevent.`, ''),
        source: text(cloudevent, 'source', `${at}cloudevent.`, 'https://github.com/aantn/kubewatch'),
        type: text(cloudevent, 'type', `${at}cloudevent.`, 'KUBERNETES_TOPOLOGY_CHANGE'),
        clusteruid: text(cloudevent, 'clusteruid', `${at}cloudevent.`, ''),
      },
      unsupported: Object.keys(handler).filter((name) => !SUPPORTED.includes(name)),
    },
    resource,
    namespace: text(root, 'namespace', '', ''),
  };
}

/** Whether changes of the kind with `resource:` key `key` are notified. */
export function notifies(config: Config, key: string): boolean {
  return config.resource[key] ?? false;
}
