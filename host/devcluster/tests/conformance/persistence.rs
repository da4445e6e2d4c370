//! `--data-dir`: objects, CRDs and the resourceVersion counter survive a restart.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kubewasm_devcluster::{DevCluster, Options};
use serde_json::json;

use super::{foo, foo_resource, install_foo};

#[tokio::test]
async fn objects_and_crds_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options { data_dir: Some(dir.path().to_path_buf()), ..Options::default() };
    let dc = DevCluster::start(opts()).await.unwrap();
    assert_eq!(dc.kubeconfig_path(), dir.path().join("kubeconfig"));
    let foos = install_foo(&dc).await;
    foos.create(&PostParams::default(), &foo("kept", 2)).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "c" }, "data": { "k": "v" } })).unwrap();
    let last = cms.create(&PostParams::default(), &cm).await.unwrap();
    let last_rv: u64 = last.metadata.resource_version.unwrap().parse().unwrap();
    dc.shutdown().await;

    let dc = DevCluster::start(opts()).await.unwrap();
    let foos: Api<kube::api::DynamicObject> = Api::namespaced_with(dc.client(), "default", &foo_resource());
    assert_eq!(foos.get("kept").await.unwrap().data["spec"]["replicas"], 2);
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    assert_eq!(cms.get("c").await.unwrap().data.unwrap()["k"], "v");
    let next = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({ "metadata": { "name": "d" } })).unwrap())
        .await
        .unwrap();
    let next_rv: u64 = next.metadata.resource_version.unwrap().parse().unwrap();
    assert!(next_rv > last_rv, "resourceVersions continue ({next_rv} > {last_rv})");
    dc.shutdown().await;
}
