//! Optimistic concurrency under contention: racing writers lose no update.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::{api_error, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_racing_on_one_object_lose_no_update() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "race" }, "data": {} })).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();

    let mut writers = Vec::new();
    for writer in 0..8 {
        let cms = cms.clone();
        writers.push(tokio::spawn(async move {
            let (mut landed, mut conflicts) = (Vec::new(), 0);
            for attempt in 0..10 {
                let mut current = cms.get("race").await.unwrap();
                let key = format!("w{writer}-{attempt}");
                current.data.get_or_insert_with(Default::default).insert(key.clone(), "x".into());
                match cms.replace("race", &PostParams::default(), &current).await {
                    Ok(_) => landed.push(key),
                    Err(e) => {
                        assert_eq!(api_error(e).code, 409, "a losing write is a 409");
                        conflicts += 1;
                    }
                }
            }
            (landed, conflicts)
        }));
    }
    let mut landed = BTreeSet::new();
    let mut conflicts = 0;
    for w in writers {
        let (l, c) = w.await.unwrap();
        landed.extend(l);
        conflicts += c;
    }
    assert_eq!(landed.len() + conflicts, 80, "every write lands or conflicts");
    let stored: BTreeSet<String> = cms.get("race").await.unwrap().data.unwrap_or_default().into_keys().collect();
    assert_eq!(stored, landed, "the object holds exactly the landed writes");
    dc.shutdown().await;
}
