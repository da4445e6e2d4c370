//! `certificates.k8s.io/v1`: `CertificateSigningRequests`.

use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::strategy::Strategy;

pub(crate) struct SigningRequests;

impl Strategy for SigningRequests {
    /// `certificates/v1`'s field label conversion.
    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(&["metadata.name", "spec.signerName"], Refusal::Unsupported, field_value)
    }
}
