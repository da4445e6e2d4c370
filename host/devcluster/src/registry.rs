//! The served resources: every built-in of the upstream data (`data/resources.json`) with its
//! kind's strategy, and the resources that objects define at run time (a CRD's custom
//! resource), served and withdrawn by after-commit effects.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::builtins;
use super::kinds;
use super::resource::{ResourceType, ScalePaths, Subresource, Version};
use super::strategy::Resource;

/// Every resource currently served.
pub(crate) struct Registry {
    builtins: Vec<Arc<Resource>>,
    /// The name of the defining object (a CRD's `plural.group`) to its resource.
    defined: BTreeMap<String, Arc<Resource>>,
}

impl Registry {
    pub(crate) fn new() -> Registry {
        Registry { builtins: builtins().into_iter().map(Arc::new).collect(), defined: BTreeMap::new() }
    }

    /// Built-ins in the order of the upstream data, then the defined resources by name.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<Resource>> {
        self.builtins.iter().chain(self.defined.values())
    }

    pub(crate) fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        self.all().find(|r| r.group == group && r.plural == plural && r.version(version).is_some()).cloned()
    }

    /// The resource of a group and plural, whatever the version.
    pub(crate) fn by_resource(&self, group: &str, plural: &str) -> Option<Arc<Resource>> {
        self.all().find(|r| r.group == group && r.plural == plural).cloned()
    }

    /// Serves `resource` under the name of its defining object, in place of what that object
    /// served before.
    pub(crate) fn serve(&mut self, resource: Arc<Resource>) {
        if let Some(name) = resource.defined_by.clone() {
            self.defined.insert(name, resource);
        }
    }

    /// Stops serving what the object `name` defined; returns it.
    pub(crate) fn withdraw(&mut self, name: &str) -> Option<Arc<Resource>> {
        self.defined.remove(name)
    }
}

/// Every served built-in resource, from the upstream data.
fn builtins() -> Vec<Resource> {
    builtins::resources()
        .iter()
        .filter(|r| kinds::serves(r))
        .map(|r| {
            let strategy = kinds::strategy(&r.group, &r.plural);
            let sub = |name: &str| r.subresources.iter().any(|s| s.name == name);
            let subresources = r
                .subresources
                .iter()
                .filter(|s| {
                    matches!(s.name.as_str(), "status" | "scale") || strategy.subresources().contains(&s.name.as_str())
                })
                .map(|s| Subresource {
                    name: s.name.clone(),
                    group: s.group.clone(),
                    version: s.version.clone(),
                    kind: s.kind.clone(),
                    verbs: s.verbs.clone(),
                })
                .collect();
            let ty = ResourceType {
                group: r.group.clone(),
                versions: vec![Version {
                    name: r.version.clone(),
                    schema: None,
                    definition: builtins::definition(&r.group, &r.version, &r.kind),
                    status: sub("status"),
                    storage: true,
                    scale: sub("scale").then(|| ScalePaths {
                        spec_replicas: ".spec.replicas".into(),
                        status_replicas: ".status.replicas".into(),
                        label_selector: Some(".spec.selector".into()),
                    }),
                    subresources,
                }],
                kind: r.kind.clone(),
                plural: r.plural.clone(),
                singular: r.singular.clone(),
                namespaced: r.namespaced,
                verbs: r.verbs.clone(),
                short_names: r.short_names.clone(),
                categories: r.categories.clone(),
            };
            Resource::new(ty, vec![strategy], None)
        })
        .collect()
}
