//! HTTPS as a real cluster serves it: a CA made at the first start and kept in the data
//! directory, a serving certificate for loopback, a kubeconfig with the CA and the
//! administrator's client certificate; plain HTTP only when asked.

use base64::Engine;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};
use kubewasm_devcluster::{DevCluster, Options};

use super::kubectl::{kubectl, kubectl_with, ok, stderr};
use super::{api_error, start};

/// The user a client is, as `kubectl auth whoami` asks.
pub async fn whoami(client: kube::Client) -> (String, Vec<String>) {
    let reviews: Api<SelfSubjectReview> = Api::all(client);
    let review = reviews.create(&PostParams::default(), &SelfSubjectReview::default()).await.unwrap();
    let info = review.status.unwrap().user_info.unwrap();
    (info.username.unwrap_or_default(), info.groups.unwrap_or_default())
}

/// The value of `key:` in a kubeconfig's text.
fn field<'a>(kubeconfig: &'a str, key: &str) -> &'a str {
    kubeconfig.lines().find_map(|l| l.trim().strip_prefix(key)).map(str::trim).unwrap_or_default()
}

#[tokio::test]
async fn the_kubeconfig_reaches_the_server_over_https_as_the_administrator() {
    let dc = start().await;
    assert!(dc.url().starts_with("https://127.0.0.1:"), "{}", dc.url());
    let text = std::fs::read_to_string(dc.kubeconfig_path()).unwrap();
    assert_eq!(field(&text, "server:"), dc.url());
    let ca = base64::engine::general_purpose::STANDARD.decode(field(&text, "certificate-authority-data:")).unwrap();
    assert_eq!(String::from_utf8(ca).unwrap(), dc.certificate_authority());
    assert!(!field(&text, "client-certificate-data:").is_empty() && !field(&text, "client-key-data:").is_empty());

    let (user, groups) = whoami(dc.client()).await;
    assert_eq!(
        (user.as_str(), groups),
        ("kubernetes-admin", vec!["system:masters".to_string(), "system:authenticated".to_string()])
    );
    let from_file = DevCluster::client_from(&text).await.unwrap();
    assert!(!Api::<Namespace>::all(from_file).list(&ListParams::default()).await.unwrap().items.is_empty());

    let out = ok(&kubectl(&dc, &["get", "namespaces"]).await);
    assert!(out.contains("kube-system"), "{out}");
    let out = ok(&kubectl(&dc, &["auth", "whoami"]).await);
    assert!(out.contains("kubernetes-admin") && out.contains("system:masters"), "{out}");
    let out = ok(&kubectl(&dc, &["cluster-info"]).await);
    assert!(out.contains(&dc.url()), "{out}");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_client_that_trusts_another_ca_is_refused_by_the_handshake() {
    let (dc, other) = (start().await, start().await);
    let mine = base64::engine::general_purpose::STANDARD.encode(dc.certificate_authority());
    let theirs = base64::engine::general_purpose::STANDARD.encode(other.certificate_authority());
    let text = std::fs::read_to_string(dc.kubeconfig_path()).unwrap().replace(&mine, &theirs);
    let client = DevCluster::client_from(&text).await.unwrap();
    let err = Api::<Namespace>::all(client).list(&ListParams::default()).await.unwrap_err();
    assert!(!matches!(err, kube::Error::Api(_)), "a TLS error, not an answer: {err:?}");
    let out = kubectl_with(&dc, &text, &["get", "namespaces"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("certificate"), "{}", stderr(&out));
    dc.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn a_client_certificate_of_another_ca_is_unauthorized() {
    let (dc, other) = (start().await, start().await);
    // A certificate `other` signed, presented to `dc` (whose CA the client trusts).
    let foreign = other.kubeconfig_for_user("mallory", Some("system:masters")).unwrap();
    let own = dc.kubeconfig_for_user("mallory", None).unwrap();
    let text = own
        .replace(field(&own, "client-certificate-data:"), field(&foreign, "client-certificate-data:"))
        .replace(field(&own, "client-key-data:"), field(&foreign, "client-key-data:"));
    let client = DevCluster::client_from(&text).await.unwrap();
    let status = api_error(Api::<Namespace>::all(client).list(&ListParams::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str(), status.message.as_str()), (401, "Unauthorized", "Unauthorized"));
    dc.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn the_ca_is_kept_in_the_data_directory_so_kubeconfigs_outlive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let options = || Options { data_dir: Some(dir.path().to_path_buf()), ..Options::default() };
    let dc = DevCluster::start(options()).await.unwrap();
    let alice = dc.kubeconfig_for_user("alice", Some("system:masters")).unwrap();
    let ca = dc.certificate_authority().to_string();
    dc.shutdown().await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("pki/ca.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the CA key is its owner's only");
    }

    let again = DevCluster::start(options()).await.unwrap();
    assert_eq!(again.certificate_authority(), ca);
    let text = alice.replace(field(&alice, "server:"), &again.url());
    let (user, _) = whoami(DevCluster::client_from(&text).await.unwrap()).await;
    assert_eq!(user, "alice", "a certificate of the first start is still good");
    again.shutdown().await;
}

#[tokio::test]
async fn plain_http_is_served_only_when_asked_and_its_requests_are_the_administrators() {
    let dc = DevCluster::start(Options { plain_http: true, ..Options::default() }).await.unwrap();
    assert!(dc.url().starts_with("http://"), "{}", dc.url());
    let text = std::fs::read_to_string(dc.kubeconfig_path()).unwrap();
    assert!(!text.contains("certificate-authority-data") && !text.contains("client-key-data"), "{text}");
    assert_eq!(whoami(dc.client()).await.0, "kubernetes-admin");
    let out = ok(&kubectl(&dc, &["get", "namespaces"]).await);
    assert!(out.contains("kube-system"), "{out}");
    assert!(dc.kubeconfig_for_user("alice", None).is_err(), "no client certificates without TLS");

    // An HTTPS server does not answer plain HTTP.
    let https = start().await;
    let mut config = https.config();
    config.cluster_url = https.url().replacen("https://", "http://", 1).parse().unwrap();
    config.default_retry = false;
    let err =
        Api::<Namespace>::all(kube::Client::try_from(config).unwrap()).list(&ListParams::default()).await.unwrap_err();
    assert!(!matches!(err, kube::Error::Api(_)), "{err:?}");
    dc.shutdown().await;
    https.shutdown().await;
}
