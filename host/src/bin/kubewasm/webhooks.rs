//! The webhook registration the plugins need, for `kubewasm webhooks`: the same objects the
//! host applies itself (`kubewasm::webhook::register`), for clusters where it may not.

use serde_json::Value;

use kubewasm::plugin::{Manifest, Settings};
use kubewasm::webhook::register::{Admits, Endpoint, RegisterError, Registration};

/// The configurations called `name` and the CRDs' conversions for `plugins`, pointing at
/// `endpoint` and trusting `ca_bundle` (PEM), ready to print as a YAML stream; empty when no
/// plugin defaults, validates or converts.
pub fn objects(
    name: &str,
    plugins: &[(&Manifest, &Settings)],
    endpoint: &Endpoint,
    ca_bundle: Option<&str>,
) -> Result<Vec<Value>, RegisterError> {
    let admits: Vec<Admits<'_>> = plugins.iter().map(|(manifest, settings)| Admits::new(manifest, settings)).collect();
    Ok(Registration::of(name, &admits, endpoint, ca_bundle)?.objects()?)
}

#[cfg(test)]
mod tests {
    use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
    use kubewasm::plugin::KindRef;
    use kubewasm_contract::{AdmissionRule, Operation};
    use kubewasm_devcluster::{DevCluster, Options};
    use serde_json::json;

    use super::*;

    fn widgets() -> KindRef {
        KindRef {
            group: "test.kubewasm.io".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
        }
    }

    /// A plugin that defaults, validates and converts its widgets and validates the deletion
    /// of namespaces, with every `[webhooks]` setting changed.
    fn plugin() -> (Manifest, Settings) {
        let manifest = Manifest::new("widgets", widgets())
            .defaults(AdmissionRule::new(widgets()))
            .validates(AdmissionRule::new(widgets()).on(&[Operation::Create, Operation::Update, Operation::Delete]))
            .validates(AdmissionRule::new(KindRef {
                group: String::new(),
                version: "v1".into(),
                kind: "Namespace".into(),
                plural: "namespaces".into(),
                namespaced: false,
            }))
            .converts();
        let settings = Settings::parse(
            "[webhooks]\nfailure-policy = \"Ignore\"\ntimeout-seconds = 5\nmatch-policy = \"Exact\"\n\
             reinvocation-policy = \"IfNeeded\"\n\
             namespace-selector = { matchExpressions = [{ key = \"team\", operator = \"In\", values = [\"a\"] }] }\n\
             object-selector = { matchLabels = { admitted = \"yes\" } }\n",
        )
        .unwrap();
        (manifest, settings)
    }

    /// The YAML stream the command prints, read back.
    fn printed(objects: &[Value]) -> Vec<DynamicObject> {
        let text = crate::yaml_stream(objects).unwrap();
        serde_yaml_ng::Deserializer::from_str(&text).map(|d| serde::Deserialize::deserialize(d).unwrap()).collect()
    }

    #[tokio::test]
    async fn the_printed_objects_are_accepted_by_the_api_server_for_a_service_and_for_a_url() {
        let cluster = DevCluster::start(Options::default()).await.unwrap();
        let client = cluster.client();
        cluster
            .apply(&kubewasm_tests::crd("test.kubewasm.io", "Widget", "widgets", &["v1", "v2"]).to_string())
            .unwrap();
        let identity = kubewasm::webhook::tls::Identity::generate(&["127.0.0.1".into()]).unwrap();
        let (manifest, settings) = plugin();
        for endpoint in [
            Endpoint::service("kubewasm-system/kubewasm-webhooks:8443").unwrap(),
            Endpoint::url("https://127.0.0.1:9443").unwrap(),
        ] {
            let objects = objects("kubewasm", &[(&manifest, &settings)], &endpoint, identity.ca_bundle()).unwrap();
            let printed = printed(&objects);
            let kinds: Vec<&str> = printed.iter().filter_map(|o| o.types.as_ref().map(|t| t.kind.as_str())).collect();
            assert_eq!(
                kinds,
                ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition"]
            );
            for object in &printed {
                let types = object.types.clone().unwrap();
                let (group, version) = types.api_version.split_once('/').unwrap();
                let plural = format!("{}s", types.kind.to_lowercase());
                let resource = ApiResource {
                    group: group.into(),
                    version: version.into(),
                    api_version: types.api_version.clone(),
                    kind: types.kind.clone(),
                    plural,
                };
                let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
                let name = object.metadata.name.clone().unwrap();
                if types.kind == "CustomResourceDefinition" {
                    let params = PatchParams::apply("kubewasm-webhooks").dry_run();
                    let applied = api.patch(&name, &params, &Patch::Apply(object)).await.unwrap();
                    assert_eq!(applied.data["spec"]["conversion"], object.data["spec"]["conversion"]);
                } else {
                    let created = api.create(&PostParams { dry_run: true, ..PostParams::default() }, object).await;
                    let created = created.unwrap_or_else(|e| panic!("{} {name} refused: {e}", types.kind));
                    assert_eq!(created.data["webhooks"], object.data["webhooks"], "nothing left to default");
                    // The server does check: a name of two segments is refused.
                    let mut bad = object.clone();
                    bad.data["webhooks"][0]["name"] = json!("widgets.kubewasm");
                    let err =
                        api.create(&PostParams { dry_run: true, ..PostParams::default() }, &bad).await.unwrap_err();
                    assert!(err.to_string().contains("at least three segments"), "{err}");
                }
            }
        }
    }
}
