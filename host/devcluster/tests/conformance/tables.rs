//! Server-side tables as kubectl shows them: a CRD's printer columns evaluated as client-go's
//! JSONPath evaluates them (filters, wildcards, the first match, each column type's rules),
//! the default `Age` column, and the Events table with its ten columns.

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use super::kubectl::{kubectl, ok};
use super::{crd_resource, exchange, start};

const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";

/// An RFC 3339 time `seconds` ago.
fn ago(seconds: i64) -> String {
    let t = jiff::Timestamp::now().as_second() - seconds;
    jiff::Timestamp::from_second(t).unwrap().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

async fn table(dc: &kubewasm_devcluster::DevCluster, path: &str) -> Value {
    let (code, _, body) = exchange(dc, "GET", path, &[("accept", TABLE)], "").await;
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

async fn install_widgets(dc: &kubewasm_devcluster::DevCluster) {
    let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
    let schema = json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true });
    let version = |name: &str, columns: Value| {
        json!({ "name": name, "served": true, "storage": name == "v1", "additionalPrinterColumns": columns,
                "subresources": { "status": {} }, "schema": { "openAPIV3Schema": schema } })
    };
    let columns = json!([
        { "name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status" },
        { "name": "Images", "type": "string", "jsonPath": ".spec.images[*]" },
        { "name": "Size", "type": "integer", "jsonPath": ".spec.size" },
        { "name": "Wide", "type": "string", "jsonPath": ".spec.note", "priority": 1, "description": "a note" },
    ]);
    let crd = json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.example.com" },
        "spec": { "group": "example.com", "scope": "Namespaced", "names": { "plural": "widgets", "kind": "Widget" },
                  "versions": [version("v1", columns), version("v2", json!([]))] } });
    crds.create(&PostParams::default(), &serde_json::from_value(crd).unwrap()).await.unwrap();
}

async fn create_widget(dc: &kubewasm_devcluster::DevCluster, name: &str, spec: Value, status: Option<Value>) {
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let body = json!({ "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": name }, "spec": spec });
    let json_type = [("content-type", "application/json")];
    assert_eq!(exchange(dc, "POST", path, &json_type, &body.to_string()).await.0, 201);
    if let Some(status) = status {
        let patch = [("content-type", "application/merge-patch+json")];
        let body = json!({ "status": status }).to_string();
        assert_eq!(exchange(dc, "PATCH", &format!("{path}/{name}/status"), &patch, &body).await.0, 200);
    }
}

#[tokio::test]
async fn printer_columns_take_the_first_match_of_their_json_path() {
    let dc = start().await;
    install_widgets(&dc).await;
    let conditions =
        json!({ "conditions": [{ "type": "Available", "status": "False" }, { "type": "Ready", "status": "True" }] });
    create_widget(&dc, "ready", json!({ "images": ["a:1", "b:2"], "size": 3, "note": "n" }), Some(conditions)).await;
    create_widget(&dc, "bare", json!({ "size": "3" }), None).await;
    let t = table(&dc, "/apis/example.com/v1/namespaces/default/widgets").await;
    let names: Vec<&str> =
        t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Name", "Ready", "Images", "Size", "Wide"]);
    assert_eq!(
        t["columnDefinitions"][2]["description"],
        "Custom resource definition column (in JSONPath format): .spec.images[*]"
    );
    assert_eq!(t["columnDefinitions"][4]["priority"], 1);
    let rows: Vec<&Value> = t["rows"].as_array().unwrap().iter().map(|r| &r["cells"]).collect();
    assert_eq!(*rows[0], json!(["bare", null, null, null, null]), "no status; a string is no integer");
    assert_eq!(*rows[1], json!(["ready", "True", "a:1", 3, "n"]));
    // A version without columns shows the default `Age`, a date printed as an age.
    let t = table(&dc, "/apis/example.com/v2/namespaces/default/widgets/ready").await;
    assert_eq!(t["columnDefinitions"][1]["name"], "Age");
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    let age = t["rows"][0]["cells"][1].as_str().unwrap();
    assert!(age.ends_with('s'), "{age}");
    dc.shutdown().await;
}

#[tokio::test]
async fn the_events_table_has_the_ten_columns_of_the_real_printer() {
    let dc = start().await;
    let series = json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": { "name": "series" },
        "eventTime": format!("{}.000000Z", ago(3 * 86400).trim_end_matches('Z')), "reportingController": "ctl", "reportingInstance": "ctl-1",
        "action": "Sync", "reason": "Synced", "type": "Normal", "note": "  synced  ",
        "regarding": { "kind": "Deployment", "name": "web", "namespace": "default" },
        "series": { "count": 4, "lastObservedTime": format!("{}.000000Z", ago(600).trim_end_matches('Z')) } });
    let json_type = [("content-type", "application/json")];
    let (code, _, body) =
        exchange(&dc, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", &json_type, &series.to_string())
            .await;
    assert_eq!(code, 201, "{body}");
    let core = json!({ "apiVersion": "v1", "kind": "Event", "metadata": { "name": "core" }, "type": "Warning",
        "reason": "Failed", "message": "broke", "involvedObject": { "kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}" },
        "source": { "component": "kubelet", "host": "n1" }, "firstTimestamp": ago(7200), "lastTimestamp": ago(900), "count": 2 });
    let (code, _, body) =
        exchange(&dc, "POST", "/api/v1/namespaces/default/events", &json_type, &core.to_string()).await;
    assert_eq!(code, 201, "{body}");

    for path in ["/api/v1/namespaces/default/events", "/apis/events.k8s.io/v1/namespaces/default/events"] {
        let t = table(&dc, path).await;
        let columns: Vec<(&str, i64)> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_i64().unwrap()))
            .collect();
        assert_eq!(
            columns,
            [
                ("Last Seen", 0),
                ("Type", 0),
                ("Reason", 0),
                ("Object", 0),
                ("Subobject", 1),
                ("Source", 1),
                ("Message", 0),
                ("First Seen", 1),
                ("Count", 1),
                ("Name", 1)
            ]
        );
        let rows = t["rows"].as_array().unwrap();
        assert_eq!(
            rows[0]["cells"],
            json!([
                "15m",
                "Warning",
                "Failed",
                "pod/p",
                "spec.containers{c}",
                "kubelet, n1",
                "broke",
                "120m",
                2,
                "core"
            ])
        );
        assert_eq!(
            rows[1]["cells"],
            json!(["10m", "Normal", "Synced", "deployment/web", "", "ctl, ctl-1", "synced", "3d", 4, "series"])
        );
    }
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_shows_printer_columns_and_wide_events() {
    let dc = start().await;
    install_widgets(&dc).await;
    let conditions = json!({ "conditions": [{ "type": "Ready", "status": "True" }] });
    create_widget(&dc, "ready", json!({ "images": ["a:1"], "size": 3 }), Some(conditions)).await;
    create_widget(&dc, "bare", json!({}), None).await;
    let out = ok(&kubectl(&dc, &["get", "widgets.v1.example.com"]).await);
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "READY", "IMAGES", "SIZE"], "{out}");
    assert_eq!(lines[1], ["bare"], "cells the path finds nothing for are null, printed empty: {out}");
    assert_eq!(lines[2], ["ready", "True", "a:1", "3"], "{out}");
    let event = json!({ "apiVersion": "v1", "kind": "Event", "metadata": { "name": "e" }, "type": "Normal", "reason": "Made",
        "message": "made", "involvedObject": { "kind": "Widget", "name": "ready" }, "lastTimestamp": ago(30), "firstTimestamp": ago(30) });
    let json_type = [("content-type", "application/json")];
    assert_eq!(exchange(&dc, "POST", "/api/v1/namespaces/default/events", &json_type, &event.to_string()).await.0, 201);
    let header = |out: &str| -> Vec<String> {
        out.lines().next().unwrap().split("  ").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
    };
    let out = ok(&kubectl(&dc, &["get", "events"]).await);
    assert_eq!(header(&out), ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], "{out}");
    assert!(out.lines().nth(1).unwrap().contains("widget/ready"), "{out}");
    let wide = ok(&kubectl(&dc, &["get", "events", "-o", "wide"]).await);
    assert_eq!(
        header(&wide),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"],
        "{wide}"
    );
    dc.shutdown().await;
}
