//! Leases, which the host's leader election holds.

use serde_json::json;

use crate::printers::{Columns, age, age_column, column, doc, name, name_column, text};
use crate::strategy::Strategy;

pub(crate) struct Leases;

impl Strategy for Leases {
    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Holder", "string", &doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"), 0),
                age_column(),
            ],
            cells: Box::new(|o| vec![name(o), json!(text(o, "/spec/holderIdentity")), age(o)]),
        }
    }
}
