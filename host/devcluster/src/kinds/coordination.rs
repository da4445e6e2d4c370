//! Leases, which the host's leader election holds.

use serde_json::json;

use crate::printers::{Columns, column, doc, text};
use crate::strategy::Strategy;

pub(crate) struct Leases;

impl Strategy for Leases {
    fn columns(&self) -> Columns {
        let holder = column("Holder", "string", &doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"), 0);
        Columns::one(holder, |o| json!(text(o, "/spec/holderIdentity")))
    }
}
