//! `CustomResourceDefinitions`: what removing one does to the resource it serves.

use serde_json::Value;

use super::{Columns, Strategy};
use crate::{crd, object, store::Store};

pub(crate) struct Crds;

impl Strategy for Crds {
    fn columns(&self) -> Option<Columns> {
        Some(super::rbac::created_at())
    }

    fn swept_while_deleting(&self, obj: &Value) -> bool {
        object::has_finalizer(obj, crd::CLEANUP)
    }

    /// A removed CRD takes its resource, and any objects left, with it.
    fn removed(&self, store: &mut Store, gone: &Value) {
        if let Some(served) = store.registry.unregister_crd(object::name(gone)) {
            let gr = (served.group.clone(), served.plural.clone());
            for obj in store.list(&gr, None) {
                store.remove(&gr, object::namespace(&obj), object::name(&obj));
            }
        }
    }
}
