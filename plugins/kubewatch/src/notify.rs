//! What kubewatch sends, byte for byte where kubewatch's handlers fix it: the message
//! text (`pkg/event/event.go`), the generic webhook's JSON (`pkg/handlers/webhook`), the
//! Slack incoming webhook's (`pkg/handlers/slackwebhook`, slack-go's `WebhookMessage`),
//! Microsoft Teams' MessageCard (`pkg/handlers/msteam`), and a CloudEvent in HTTP binary
//! mode (CloudEvents 1.0.2 `http-protocol-binding.md` §3.1) with kubewatch's data.

use kubewasm_sdk::http::{self, HttpRequest};
use kubewasm_sdk::serde_json::{self, Value};
use kubewasm_sdk::{Change, Error};
use serde::Serialize;

use crate::config::{CloudEvent, SlackWebhook};

/// One change as kubewatch describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The kind (`Pod`).
    pub kind: String,
    pub api_version: String,
    pub name: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    /// `Created`, `Updated`, `Deleted`.
    pub reason: &'static str,
    /// The send time, RFC 3339.
    pub time: String,
    /// The delivery id: the same on every retry.
    pub id: String,
    pub change: Change,
    pub object: Value,
    pub old_object: Option<Value>,
}

impl Notice {
    /// kubewatch's text: ``A `Pod` in namespace `default` has been `Created`:\n`nginx` ``.
    pub fn message(&self) -> String {
        format!("A `{}` in namespace `{}` has been `{}`:\n`{}`", self.kind, self.namespace, self.reason, self.name)
    }

    /// kubewatch's status of the change, which picks the colour.
    fn status(&self) -> &'static str {
        match self.change {
            Change::Added => "Normal",
            Change::Updated => "Warning",
            Change::Deleted => "Danger",
        }
    }
}

/// The reason kubewatch gives a change.
pub fn reason(change: Change) -> &'static str {
    match change {
        Change::Added => "Created",
        Change::Updated => "Updated",
        Change::Deleted => "Deleted",
    }
}

fn json_body(value: &impl Serialize) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(value).map_err(|e| Error::permanent(format!("payload: {e}")))
}

/// The generic webhook: `{"eventmeta":{kind,name,namespace,reason},"text","time"}`.
pub fn webhook(url: &str, notice: &Notice) -> Result<HttpRequest, Error> {
    #[derive(Serialize)]
    struct Message<'a> {
        eventmeta: EventMeta<'a>,
        text: String,
        time: &'a str,
    }
    #[derive(Serialize)]
    struct EventMeta<'a> {
        kind: &'a str,
        name: &'a str,
        namespace: &'a str,
        reason: &'a str,
    }
    let message = Message {
        eventmeta: EventMeta {
            kind: &notice.kind,
            name: &notice.name,
            namespace: &notice.namespace,
            reason: notice.reason,
        },
        text: notice.message(),
        time: &notice.time,
    };
    Ok(http::post(url).header("Content-Type", "application/json").body(json_body(&message)?).build())
}

/// A Slack-compatible incoming webhook (Slack, Mattermost): slack-go's
/// `WebhookMessage`, whose empty `username`, `icon_emoji` and `channel` are left out.
pub fn slack(config: &SlackWebhook, notice: &Notice) -> Result<HttpRequest, Error> {
    #[derive(Serialize)]
    struct Message<'a> {
        #[serde(skip_serializing_if = "str::is_empty")]
        username: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        icon_emoji: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        channel: &'a str,
        text: String,
        replace_original: bool,
        delete_original: bool,
    }
    let message = Message {
        username: &config.username,
        icon_emoji: &config.emoji,
        channel: &config.channel,
        text: notice.message(),
        replace_original: false,
        delete_original: false,
    };
    Ok(http::post(&config.slackwebhookurl)
        .header("Content-Type", "application/json")
        .body(json_body(&message)?)
        .build())
}

/// A Microsoft Teams incoming webhook: the Office 365 connector MessageCard kubewatch
/// sends (Go's `json.Encoder` ends it with a newline).
pub fn teams(url: &str, notice: &Notice) -> Result<HttpRequest, Error> {
    #[derive(Serialize)]
    struct Card<'a> {
        #[serde(rename = "@type")]
        type_: &'a str,
        #[serde(rename = "@context")]
        context: &'a str,
        #[serde(rename = "themeColor")]
        theme_color: &'a str,
        summary: &'a str,
        title: &'a str,
        sections: Vec<Section>,
    }
    #[derive(Serialize)]
    struct Section {
        #[serde(rename = "activityTitle")]
        activity_title: String,
        facts: Option<Vec<Value>>,
        markdown: bool,
    }
    let theme_color = match notice.status() {
        "Normal" => "2DC72D",
        "Warning" => "DEFF22",
        _ => "8C1A1A",
    };
    let card = Card {
        type_: "MessageCard",
        context: "http://schema.org/extensions",
        theme_color,
        summary: "kubewatch notification received",
        title: "kubewatch",
        sections: vec![Section { activity_title: notice.message(), facts: None, markdown: true }],
    };
    let mut body = json_body(&card)?;
    body.push(b'\n');
    Ok(http::post(url).header("Content-Type", "application/json").body(body).build())
}

/// A CloudEvent in HTTP binary mode: the attributes in `ce-` headers (the id is the
/// delivery id, so a receiver can drop a retry it already has), kubewatch's data as the
/// body, its media type as `Content-Type`.
pub fn cloudevent(config: &CloudEvent, notice: &Notice) -> Result<HttpRequest, Error> {
    #[derive(Serialize)]
    struct Data<'a> {
        operation: &'a str,
        kind: &'a str,
        #[serde(rename = "clusterUid")]
        cluster_uid: &'a str,
        description: String,
        #[serde(rename = "apiVersion")]
        api_version: &'a str,
        obj: Option<Value>,
        #[serde(rename = "oldObj")]
        old_obj: Option<Value>,
    }
    let operation = match notice.change {
        Change::Added => "create",
        Change::Updated => "update",
        Change::Deleted => "delete",
    };
    let data = Data {
        operation,
        kind: &notice.kind,
        cluster_uid: &config.clusteruid,
        description: notice.message(),
        api_version: &notice.api_version,
        obj: Some(redact(notice.object.clone())),
        old_obj: notice.old_object.clone().map(redact),
    };
    let subject =
        if notice.namespace.is_empty() { notice.name.clone() } else { format!("{}/{}", notice.namespace, notice.name) };
    let mut request = http::post(&config.url)
        .header("ce-specversion", "1.0")
        .header("ce-id", &percent_encode(&notice.id))
        .header("ce-source", &percent_encode(config.source()))
        .header("ce-type", &percent_encode(config.type_()))
        .header("ce-time", &percent_encode(&notice.time));
    if !subject.is_empty() {
        request = request.header("ce-subject", &percent_encode(&subject));
    }
    Ok(request.header("Content-Type", "application/json").body(json_body(&data)?).build())
}

/// A Secret's values, never sent: kubewatch replaces them (`pkg/redact`).
pub fn redact(mut object: Value) -> Value {
    const REDACTED: &str = "[redacted by kubewatch]";
    if object["kind"] != "Secret" {
        return object;
    }
    // base64 of REDACTED: what `data` holds.
    const REDACTED_BASE64: &str = "W3JlZGFjdGVkIGJ5IGt1YmV3YXRjaF0=";
    for (field, value) in [("data", REDACTED_BASE64), ("stringData", REDACTED)] {
        if let Some(map) = object.get_mut(field).and_then(Value::as_object_mut) {
            for v in map.values_mut() {
                *v = Value::from(value);
            }
        }
    }
    object
}

/// A header value as CloudEvents' HTTP binding writes it (§3.1.3.2): space, `"`, `%`
/// and every byte outside printable ASCII as `%XY`.
pub fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if (0x21..=0x7e).contains(&b) && b != b'"' && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use kubewasm_sdk::serde_json::json;

    use super::*;

    fn notice(change: Change) -> Notice {
        Notice {
            kind: "Pod".into(),
            api_version: "v1".into(),
            name: "nginx".into(),
            namespace: "default".into(),
            reason: reason(change),
            time: "2026-01-02T03:04:05.123456789Z".into(),
            id: "u1:42:added".into(),
            change,
            object: json!({"kind": "Pod", "metadata": {"name": "nginx"}}),
            old_object: None,
        }
    }

    fn body(request: &HttpRequest) -> String {
        String::from_utf8(request.body.clone()).unwrap()
    }

    #[test]
    fn the_message_is_kubewatchs() {
        assert_eq!(notice(Change::Added).message(), "A `Pod` in namespace `default` has been `Created`:\n`nginx`");
        let mut ns = notice(Change::Deleted);
        (ns.kind, ns.name, ns.namespace) = ("Namespace".into(), "team-a".into(), String::new());
        assert_eq!(ns.message(), "A `Namespace` in namespace `` has been `Deleted`:\n`team-a`");
    }

    #[test]
    fn the_webhook_payload_is_kubewatchs() {
        let request = webhook("http://h/hook", &notice(Change::Added)).unwrap();
        assert_eq!(
            body(&request),
            r#"{"eventmeta":{"kind":"Pod","name":"nginx","namespace":"default","reason":"Created"},"text":"A `Pod` in namespace `default` has been `Created`:\n`nginx`","time":"2026-01-02T03:04:05.123456789Z"}"#
        );
        assert_eq!((request.method.as_str(), request.url.as_str()), ("POST", "http://h/hook"));
    }

    #[test]
    fn the_slack_payload_leaves_out_what_is_not_set() {
        let config = SlackWebhook {
            slackwebhookurl: "https://hooks.slack.com/services/T/B/X".into(),
            channel: "#alerts".into(),
            username: "kubewatch".into(),
            emoji: ":k8s:".into(),
        };
        assert_eq!(
            body(&slack(&config, &notice(Change::Added)).unwrap()),
            r##"{"username":"kubewatch","icon_emoji":":k8s:","channel":"#alerts","text":"A `Pod` in namespace `default` has been `Created`:\n`nginx`","replace_original":false,"delete_original":false}"##
        );
        let bare = SlackWebhook { channel: String::new(), username: String::new(), emoji: String::new(), ..config };
        assert!(body(&slack(&bare, &notice(Change::Added)).unwrap()).starts_with(r#"{"text":"#));
    }

    #[test]
    fn the_teams_card_is_kubewatchs() {
        assert_eq!(
            body(&teams("https://x.webhook.office.com/w", &notice(Change::Added)).unwrap()),
            "{\"@type\":\"MessageCard\",\"@context\":\"http://schema.org/extensions\",\"themeColor\":\"2DC72D\",\"summary\":\"kubewatch notification received\",\"title\":\"kubewatch\",\"sections\":[{\"activityTitle\":\"A `Pod` in namespace `default` has been `Created`:\\n`nginx`\",\"facts\":null,\"markdown\":true}]}\n"
        );
        assert!(body(&teams("https://x/w", &notice(Change::Updated)).unwrap()).contains("\"themeColor\":\"DEFF22\""));
        assert!(body(&teams("https://x/w", &notice(Change::Deleted)).unwrap()).contains("\"themeColor\":\"8C1A1A\""));
    }

    #[test]
    fn a_cloudevent_goes_in_binary_mode_with_the_delivery_id() {
        let config = CloudEvent { url: "http://h/ce".into(), ..CloudEvent::default() };
        let request = cloudevent(&config, &notice(Change::Added)).unwrap();
        let header = |name: &str| request.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        assert_eq!(header("ce-specversion"), Some("1.0"));
        assert_eq!(header("ce-id"), Some("u1:42:added"));
        assert_eq!(header("ce-source"), Some("https://github.com/aantn/kubewatch"));
        assert_eq!(header("ce-type"), Some("KUBERNETES_TOPOLOGY_CHANGE"));
        assert_eq!(header("ce-subject"), Some("default/nginx"));
        assert_eq!(header("Content-Type"), Some("application/json"));
        assert!(header("ce-datacontenttype").is_none(), "binary mode carries it as Content-Type only");
        let data: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(data["operation"], "create");
        assert_eq!(data["obj"]["metadata"]["name"], "nginx");
        assert_eq!(data["oldObj"], Value::Null);
    }

    #[test]
    fn header_values_are_percent_encoded_as_the_binding_says() {
        assert_eq!(percent_encode("Euro € 😀"), "Euro%20%E2%82%AC%20%F0%9F%98%80");
        assert_eq!(percent_encode("a\"b%c"), "a%22b%25c");
    }

    #[test]
    fn secret_values_are_never_sent() {
        let secret = json!({"kind": "Secret", "data": {"k": "c2VjcmV0"}, "stringData": {"s": "secret"}});
        let redacted = redact(secret);
        assert_eq!(redacted["data"]["k"], "W3JlZGFjdGVkIGJ5IGt1YmV3YXRjaF0=");
        assert_eq!(redacted["stringData"]["s"], "[redacted by kubewatch]");
    }
}
