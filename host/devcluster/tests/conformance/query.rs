//! Query parameters as kube-apiserver 1.33 reads them (apimachinery's parameter codec and the
//! options validation): booleans true unless `0` or `false`, integers that must parse, options
//! refused with 422 naming their kind, a DELETE body that replaces the query, the `timeout`
//! and `pretty` parameters.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::kubectl::{kubectl, ok};
use super::{exchange, raw, start};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name }, "data": { "k": "v" } })).unwrap()
}

async fn with_one_configmap() -> kubewasm_devcluster::DevCluster {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("one")).await.unwrap();
    dc
}

#[tokio::test]
async fn watch_is_true_for_any_value_but_zero_and_false_as_python_sends_it() {
    let dc = with_one_configmap().await;
    for watching in ["watch", "watch=", "watch=True", "watch=yes", "watch=1"] {
        let (code, _, body) = exchange(&dc, "GET", &format!("{CONFIGMAPS}?{watching}&timeoutSeconds=1"), &[], "").await;
        assert_eq!(code, 200);
        assert!(body.starts_with("{\"type\":\"ADDED\""), "{watching}: {body}");
    }
    for listing in ["watch=False", "watch=0", "watch=FALSE"] {
        let (code, list) = raw(&dc, "GET", &format!("{CONFIGMAPS}?{listing}"), "", "").await;
        assert_eq!((code, list["kind"].as_str()), (200, Some("ConfigMapList")), "{listing}");
    }
    dc.shutdown().await;
}

#[tokio::test]
async fn integers_that_do_not_parse_are_400_with_go_s_message() {
    let dc = with_one_configmap().await;
    let (code, status) = raw(&dc, "GET", &format!("{CONFIGMAPS}?limit=abc"), "", "").await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(status["message"], "strconv.ParseInt: parsing \"abc\": invalid syntax");
    let (code, status) =
        raw(&dc, "GET", &format!("{CONFIGMAPS}?watch=1&timeoutSeconds=99999999999999999999"), "", "").await;
    assert_eq!(code, 400);
    assert_eq!(status["message"], "strconv.ParseInt: parsing \"99999999999999999999\": value out of range");
    // A limit of zero or less lists everything; unknown parameters are ignored.
    let (code, list) = raw(&dc, "GET", &format!("{CONFIGMAPS}?limit=-1&unknownParam=1"), "", "").await;
    let (_, all) = raw(&dc, "GET", CONFIGMAPS, "", "").await;
    assert_eq!(code, 200);
    assert_eq!(list["items"], all["items"]);
    assert!(list["metadata"].get("continue").is_none());
    dc.shutdown().await;
}

#[tokio::test]
async fn list_and_watch_options_are_checked_as_list_options() {
    let dc = with_one_configmap().await;
    let refused = |query: &'static str, message: &'static str| {
        let dc = &dc;
        async move {
            let (code, status) = raw(dc, "GET", &format!("{CONFIGMAPS}?{query}"), "", "").await;
            assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")), "{query}: {status}");
            assert_eq!(status["message"], format!("ListOptions.meta.k8s.io \"\" is invalid: {message}"), "{query}");
            assert_eq!(status["details"]["group"], "meta.k8s.io");
            assert_eq!(status["details"]["kind"], "ListOptions");
        }
    };
    refused(
        "resourceVersionMatch=Exact",
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
    )
    .await;
    refused(
        "resourceVersion=1&resourceVersionMatch=exact",
        "resourceVersionMatch: Unsupported value: \"exact\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
    )
    .await;
    refused("sendInitialEvents=true", "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list").await;
    refused(
        "watch=1&resourceVersionMatch=NotOlderThan",
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
    )
    .await;
    dc.shutdown().await;
}

#[tokio::test]
async fn write_options_are_refused_with_422_naming_their_kind() {
    let dc = with_one_configmap().await;
    let body = json!({ "metadata": { "name": "two" } }).to_string();
    let (code, status) = raw(&dc, "POST", &format!("{CONFIGMAPS}?dryRun=x"), "application/json", &body).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"x\"}: supported values: \"All\""
    );
    let (code, status) =
        raw(&dc, "POST", &format!("{CONFIGMAPS}?fieldValidation=strict"), "application/json", &body).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
    let long = "m".repeat(129);
    let (code, status) =
        raw(&dc, "PUT", &format!("{CONFIGMAPS}/one?fieldManager={long}"), "application/json", &body).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "UpdateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    // `force` belongs to apply; even `force=false` on a merge patch is refused.
    let (code, status) =
        raw(&dc, "PATCH", &format!("{CONFIGMAPS}/one?force=false"), "application/merge-patch+json", "{}").await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    assert!(cms.get_opt("two").await.unwrap().is_none(), "nothing was created");
    dc.shutdown().await;
}

#[tokio::test]
async fn force_true_as_python_sends_it_takes_over_an_applied_field() {
    let dc = with_one_configmap().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let applied = |value: &str| json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "one" }, "data": { "k": value } });
    cms.patch("one", &PatchParams::apply("first").force(), &Patch::Apply(applied("a"))).await.unwrap();
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  k: b\n";
    let path = format!("{CONFIGMAPS}/one?fieldManager=second");
    let (code, _) = raw(&dc, "PATCH", &path, "application/apply-patch+yaml", yaml).await;
    assert_eq!(code, 409, "a conflict without force");
    let (code, taken) = raw(&dc, "PATCH", &format!("{path}&force=True"), "application/apply-patch+yaml", yaml).await;
    assert_eq!((code, &taken["data"]["k"]), (200, &json!("b")), "{taken}");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_delete_body_replaces_the_query_and_an_empty_one_reads_it() {
    let dc = with_one_configmap().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("two")).await.unwrap();
    let path = format!("{CONFIGMAPS}/one?propagationPolicy=Bogus");
    let (code, status) = raw(&dc, "DELETE", &path, "application/json", r#"{"propagationPolicy":"Orphan"}"#).await;
    assert_eq!((code, status["status"].as_str()), (200, Some("Success")), "the query is not read: {status}");
    let path = format!("{CONFIGMAPS}/two?propagationPolicy=Bogus");
    let (code, status) = raw(&dc, "DELETE", &path, "", "").await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    // An empty body's query gives preconditions.
    let (code, status) = raw(&dc, "DELETE", &format!("{CONFIGMAPS}/two?uid=not-its-uid"), "", "").await;
    assert_eq!(code, 409, "{status}");
    assert!(status["message"].as_str().unwrap().contains("Precondition failed: UID in precondition: not-its-uid"));
    dc.shutdown().await;
}

#[tokio::test]
async fn timeout_and_pretty_parameters_are_read_as_the_server_filters_read_them() {
    let dc = with_one_configmap().await;
    let (code, status) = raw(&dc, "GET", &format!("{CONFIGMAPS}?timeout=x"), "", "").await;
    assert_eq!(code, 400);
    assert_eq!(status["message"], "invalid timeout specified in the request URL - time: invalid duration \"x\"");
    let (code, _) = raw(&dc, "GET", &format!("{CONFIGMAPS}?timeout=30s"), "", "").await;
    assert_eq!(code, 200);
    let (_, _, pretty) = exchange(&dc, "GET", &format!("{CONFIGMAPS}/one?pretty=true"), &[], "").await;
    assert!(pretty.starts_with("{\n  \"kind\": \"ConfigMap\",\n  \"apiVersion\": \"v1\",\n"), "{pretty}");
    assert!(pretty.ends_with('}'), "no newline after an indented body");
    let curl = [("user-agent", "curl/8.5.0")];
    let (_, _, by_agent) = exchange(&dc, "GET", &format!("{CONFIGMAPS}/one"), &curl, "").await;
    assert_eq!(by_agent, pretty);
    let (_, _, compact) = exchange(&dc, "GET", &format!("{CONFIGMAPS}/one?pretty=0"), &curl, "").await;
    assert!(compact.starts_with("{\"kind\":\"ConfigMap\"") && compact.ends_with("}\n"), "{compact}");
    let parsed: Value = serde_json::from_str(&pretty).unwrap();
    assert_eq!(parsed, serde_json::from_str::<Value>(&compact).unwrap());
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_sends_raw_queries_and_dry_runs_as_the_server_reads_them() {
    let dc = with_one_configmap().await;
    let watched = ok(&kubectl(&dc, &["get", "--raw", &format!("{CONFIGMAPS}?watch=yes&timeoutSeconds=1")]).await);
    assert!(watched.contains("\"type\":\"ADDED\""), "{watched}");
    let refused = kubectl(&dc, &["get", "--raw", &format!("{CONFIGMAPS}?limit=abc")]).await;
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("strconv.ParseInt: parsing \\\"abc\\\": invalid syntax")
            || err.contains("strconv.ParseInt: parsing \"abc\": invalid syntax"),
        "{err}"
    );
    let dry =
        ok(&kubectl(&dc, &["create", "configmap", "x", "--from-literal=a=b", "--dry-run=server", "-o", "name"]).await);
    assert_eq!(dry.trim(), "configmap/x");
    let missing = kubectl(&dc, &["get", "configmap", "x"]).await;
    assert!(!missing.status.success(), "a server dry run stores nothing");
    let out = ok(&kubectl(&dc, &["delete", "configmap", "one", "--cascade=foreground"]).await);
    assert!(out.contains("deleted"), "{out}");
    dc.shutdown().await;
}
