// kubewatch (robusta-dev/kubewatch) as a kubewasm plugin: for every create, update and
// delete of the kinds its configuration turns on, a notification to each configured
// handler: a generic webhook, a Slack-compatible or Microsoft Teams incoming webhook, a
// CloudEvents receiver. The same plugin as plugins/kubewatch, in TypeScript.
//
// It reconciles nothing: its manifest watches every kind kubewatch knows, and the host
// hands each change to `handle`, in order per object, again with backoff while a receiver
// is down. What kubewatch does not do, and this does: a failed notification is retried
// (the object's later notifications wait behind it), objects created while the host was
// down are announced when it comes back, and a CloudEvent's id is the same on every retry.

import { HttpRequestError, Manifest, ObjectEvent, PermanentError, ReconcileError, RetryableError, Watch, http, log, plugin } from '@kubewasm/sdk';

import { notifies, readConfig } from './config.ts';
import { type Notice, type Notification, cloudevent, reason, slack, teams, webhook } from './notify.ts';
import { RESOURCES, keyOf } from './resources.ts';

export const kubewatch = plugin({
  describe() {
    return Manifest.handler('kubewatch-ts', {
      watches: RESOURCES.map(([, kind]) => new Watch(kind)),
      // Any receiver the operator configures; the operator grants which.
      outbound: ['http://*:*', 'https://*:*'],
    });
  },

  handle(event: ObjectEvent) {
    const config = readConfig(event.config);
    const key = keyOf(event.kind);
    if (key === undefined || !notifies(config, key)) return;
    const object = event.object;
    const namespace = object.namespace ?? '';
    if (config.namespace && event.kind.namespaced && namespace !== config.namespace) return;
    for (const name of config.handler.unsupported) {
      log.warn(`handler ${name} is not supported by this plugin; configure webhook, slackwebhook, msteams or cloudevent`);
    }
    const notice: Notice = {
      kind: event.kind.kind,
      apiVersion: event.kind.apiVersion,
      name: object.name,
      namespace,
      reason: reason(event.change),
      time: event.nowRfc3339,
      id: event.deliveryId,
      change: event.change,
      object,
      oldObject: event.oldObject,
    };
    const { webhook: hook, slackwebhook, msteams, cloudevent: ce } = config.handler;
    const notifications: [string, Notification][] = [];
    if (hook) notifications.push(['webhook', webhook(hook.url, notice)]);
    if (slackwebhook) notifications.push(['slackwebhook', slack(slackwebhook, notice)]);
    if (msteams) notifications.push(['msteams', teams(msteams.webhookurl, notice)]);
    if (ce) notifications.push(['cloudevent', cloudevent(ce, notice)]);
    // Every receiver is tried. One that may take it later has the host retry, even when
    // another refused it for good: a receiver that is down loses nothing (the ones that
    // succeeded then get it again: at least once).
    let failure: ReconcileError | undefined;
    for (const [handler, notification] of notifications) {
      try {
        deliver(handler, notification);
      } catch (e) {
        if (!(e instanceof ReconcileError)) throw e;
        log.warn('notification not delivered', { handler, error: e.message });
        if (failure === undefined || (e.retryable && !failure.retryable)) failure = e;
      }
    }
    if (failure) throw failure;
  },
});

/** Sends one notification: a 2xx answer delivers it; 408, 429 and 5xx, a timeout or a
 * failed connection are retried; any other answer, or a URL not granted, is not. */
function deliver(handler: string, { url, method, headers, body }: Notification) {
  let response;
  try {
    response = http.fetch(url, { method, headers, body });
  } catch (e) {
    if (!(e instanceof HttpRequestError)) throw e;
    const message = `${handler}: ${e.kind}: ${e.reason}`;
    throw e.retryable ? new RetryableError(message) : new PermanentError(message);
  }
  const status = response.status;
  if (status >= 200 && status < 300) return;
  if (status === 408 || status === 429 || status >= 500) throw new RetryableError(`${handler}: the receiver answered ${status}`);
  throw new PermanentError(`${handler}: the receiver refused the notification (${status})`);
}
