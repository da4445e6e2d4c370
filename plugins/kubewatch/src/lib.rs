//! kubewatch (robusta-dev/kubewatch) as a kubewasm plugin: for every create, update and
//! delete of the kinds its configuration turns on, a notification to each configured
//! handler: a generic webhook, a Slack-compatible or Microsoft Teams incoming webhook,
//! a CloudEvents receiver.
//!
//! It reconciles nothing: its manifest watches every kind kubewatch knows, and the host
//! hands each change to [`Kubewatch::handle`], in order per object, again with backoff
//! while a receiver is down. What kubewatch does not do, and this does: a failed
//! notification is retried (the object's later notifications wait behind it), objects
//! created while the host was down are announced when it comes back, and a CloudEvent's
//! id is the same on every retry.

pub mod config;
pub mod notify;
pub mod resources;

use kubewasm_sdk::http::{HttpError, HttpRequest};
use kubewasm_sdk::prelude::*;
use kubewasm_sdk::{http, log};

use config::Config;
use notify::Notice;

/// The plugin.
pub struct Kubewatch;

impl Handler for Kubewatch {
    fn describe() -> Manifest {
        let manifest = Manifest::handler("kubewatch")
            // Any receiver the operator configures; the operator grants which.
            .outbound("http://*:*")
            .outbound("https://*:*");
        resources::kinds().fold(manifest, |m, kind| m.watch(Watch::new(kind)))
    }

    fn handle(event: &ObjectEvent) -> Result<(), Error> {
        let config: Config = event.config()?;
        let Some(key) = resources::key_of(&event.kind) else { return Ok(()) };
        if !config.watches(key) {
            return Ok(());
        }
        let object = &event.object;
        let namespace = object.namespace().unwrap_or_default();
        if !config.namespace.is_empty() && event.kind.namespaced && namespace != config.namespace {
            return Ok(());
        }
        for name in config.handler.unsupported.keys() {
            log::warn(&format!(
                "handler {name} is not supported by this plugin; configure webhook, slackwebhook, msteams or cloudevent"
            ));
        }
        let notice = Notice {
            kind: event.kind.kind.clone(),
            api_version: event.kind.api_version(),
            name: object.name().to_string(),
            namespace: namespace.to_string(),
            reason: notify::reason(event.change),
            time: event.now.clone(),
            id: event.delivery_id.clone(),
            change: event.change,
            object: object.json().clone(),
            old_object: event.old_object.as_ref().map(|o| o.json().clone()),
        };
        let handlers = &config.handler;
        let mut requests = Vec::new();
        if let Some(webhook) = &handlers.webhook {
            requests.push(("webhook", notify::webhook(&webhook.url, &notice)?));
        }
        if let Some(slack) = &handlers.slackwebhook {
            requests.push(("slackwebhook", notify::slack(slack, &notice)?));
        }
        if let Some(teams) = &handlers.msteams {
            requests.push(("msteams", notify::teams(&teams.webhookurl, &notice)?));
        }
        if let Some(cloudevent) = &handlers.cloudevent {
            requests.push(("cloudevent", notify::cloudevent(cloudevent, &notice)?));
        }
        // Every receiver is tried. One that may take it later has the host retry, even when
        // another refused it for good: a receiver that is down loses nothing (the ones that
        // succeeded then get it again: at least once).
        let mut failure: Option<Error> = None;
        for (handler, request) in requests {
            if let Err(e) = deliver(handler, &request) {
                log::log(
                    log::Level::Warn,
                    "notification not delivered",
                    &[("handler", handler), ("error", &e.message)],
                );
                if failure.as_ref().is_none_or(|f| e.retryable && !f.retryable) {
                    failure = Some(e);
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

/// Sends one notification: a 2xx answer delivers it; 408, 429 and 5xx, a timeout or a
/// failed connection are retried; any other answer, or a URL not granted, is not.
fn deliver(handler: &str, request: &HttpRequest) -> Result<(), Error> {
    let response = http::send(request).map_err(|e: HttpError| {
        let message = format!("{handler}: {e}");
        if e.is_transient() { Error::retryable(message) } else { Error::permanent(message) }
    })?;
    match response.status {
        200..=299 => Ok(()),
        408 | 429 | 500..=599 => Err(Error::retryable(format!("{handler}: the receiver answered {}", response.status))),
        status => Err(Error::permanent(format!("{handler}: the receiver refused the notification ({status})"))),
    }
}

kubewasm_sdk::export_handler!(Kubewatch);

#[cfg(test)]
mod tests {
    use kubewasm_sdk::serde_json::{Value, json};
    use kubewasm_sdk::testing::{self, Http, TestEvent, respond};

    use super::*;

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default", "uid": "u1", "resourceVersion": "7"}})
    }

    fn config(resources: Value) -> Value {
        json!({"resource": resources, "handler": {"webhook": {"url": "http://receiver/hook"}}})
    }

    #[test]
    fn a_change_of_a_kind_turned_on_goes_to_each_handler() {
        let config = json!({
            "resource": {"pod": true},
            "handler": {
                "webhook": {"url": "http://receiver/hook"},
                "cloudevent": {"url": "http://receiver/ce"},
            },
        });
        let http = Http::new().on("POST", "http://receiver/*", respond(200, ""));
        let handled = testing::handle::<Kubewatch>(TestEvent::added(pod("web")).config(config).http(http));
        assert!(handled.result.is_ok(), "{:?}", handled.result);
        let urls: Vec<&str> = handled.requests.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(urls, ["http://receiver/hook", "http://receiver/ce"]);
        let ce = &handled.requests[1];
        assert!(ce.headers.contains(&("ce-id".to_string(), "u1:7:added".to_string())), "{:?}", ce.headers);
    }

    #[test]
    fn kinds_not_turned_on_and_other_namespaces_send_nothing() {
        let off =
            testing::handle::<Kubewatch>(TestEvent::added(pod("web")).config(config(json!({"deployment": true}))));
        assert!(off.result.is_ok() && off.requests.is_empty(), "{off:?}");
        let mut elsewhere = config(json!({"pod": true}));
        elsewhere["namespace"] = json!("team-a");
        let other = testing::handle::<Kubewatch>(TestEvent::deleted(pod("web")).config(elsewhere));
        assert!(other.result.is_ok() && other.requests.is_empty(), "{other:?}");
    }

    #[test]
    fn a_receiver_that_is_down_is_retried_and_one_that_refuses_is_not() {
        let down = Http::new().on("POST", "*", respond(503, "down"));
        let event = || TestEvent::updated(pod("web"), pod("web")).config(config(json!({"pod": true})));
        let error = testing::handle::<Kubewatch>(event().http(down)).result.unwrap_err();
        assert!(error.retryable && error.message.contains("503"), "{error:?}");
        let refused = Http::new().on("POST", "*", respond(400, "bad"));
        let error = testing::handle::<Kubewatch>(event().http(refused)).result.unwrap_err();
        assert!(!error.retryable, "{error:?}");
        // No canned response: the request is denied, as one not granted.
        let error = testing::handle::<Kubewatch>(event()).result.unwrap_err();
        assert!(!error.retryable && error.message.contains("denied"), "{error:?}");
    }

    #[test]
    fn a_receiver_that_is_down_gets_the_change_later_though_another_refused_it() {
        let config = json!({
            "resource": {"pod": true},
            "handler": {
                "webhook": {"url": "http://receiver/hook"},
                "cloudevent": {"url": "http://receiver/ce"},
            },
        });
        let http = Http::new().on("POST", "http://receiver/hook", respond(404, "")).on(
            "POST",
            "http://receiver/ce",
            respond(502, ""),
        );
        let handled = testing::handle::<Kubewatch>(TestEvent::added(pod("web")).config(config).http(http));
        let error = handled.result.unwrap_err();
        assert!(error.retryable && error.message.starts_with("cloudevent"), "{error:?}");
    }

    #[test]
    fn it_watches_every_kind_of_kubewatch_and_may_reach_any_url_it_is_granted() {
        let manifest = testing::describe_handler::<Kubewatch>();
        assert_eq!(manifest.watches.len(), 20);
        assert!(manifest.parent.is_none());
        assert_eq!(manifest.outbound, ["http://*:*", "https://*:*"]);
    }
}
