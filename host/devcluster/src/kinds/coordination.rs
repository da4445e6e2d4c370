//! Leases, which the host's leader election holds.

use serde_json::json;

use super::{Columns, Strategy, age, age_column, column, doc, name, name_column, text};

pub(crate) struct Leases;

impl Strategy for Leases {
    fn columns(&self) -> Option<Columns> {
        Some(Columns {
            defs: vec![
                name_column(),
                column("Holder", "string", &doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"), 0),
                age_column(),
            ],
            cells: Box::new(|o| vec![name(o), json!(text(o, "/spec/holderIdentity")), age(o)]),
        })
    }
}
