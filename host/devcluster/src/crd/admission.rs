//! The admission plugins that keep CRDs and their custom resources consistent: no custom
//! resource is created while its CRD is being deleted, and no CRD takes a resource that
//! something else serves.

use serde_json::Value;

use super::DEFINITIONS;
use super::definition::{is_definitions, served};
use crate::admission::{Admission, Attributes, Lookup, Mutating, Operation, Validating};
use crate::object;
use crate::status::{ApiError, Cause};

/// The admission plugins of CRDs.
pub(crate) fn admission() -> Admission {
    Admission::new(vec![Box::new(TerminatingDefinition)], vec![Box::new(NamesConflict)])
}

/// A custom resource is not created while its CRD is being deleted (the real server's CRD
/// handler refuses it before anything else looks at the request).
struct TerminatingDefinition;

impl Mutating for TerminatingDefinition {
    fn admit(&self, a: &Attributes<'_>, _obj: &mut Value, lookup: &dyn Lookup) -> Result<(), ApiError> {
        let Some(crd_name) = a.resource.defined_by.as_deref().filter(|_| a.operation == Operation::Create) else {
            return Ok(());
        };
        let definitions = (DEFINITIONS.0.to_string(), DEFINITIONS.1.to_string());
        match lookup.object(&definitions, "", crd_name) {
            Some(crd) if object::is_deleting(&crd) => Err(ApiError::method_not_allowed_because(
                "create not allowed while custom resource definition is terminating",
            )),
            _ => Ok(()),
        }
    }
}

/// A CRD may not define a resource served already, by a built-in or another CRD.
struct NamesConflict;

impl Validating for NamesConflict {
    fn validate(&self, a: &Attributes<'_>, obj: &Value, lookup: &dyn Lookup) -> Result<(), ApiError> {
        if !is_definitions(&a.resource.group, &a.resource.plural) {
            return Ok(());
        }
        let (group, plural) = served(obj);
        let taken = lookup.served(&group, &plural).is_some_and(|r| r.defined_by.as_deref() != Some(a.name));
        if !taken {
            return Ok(());
        }
        Err(ApiError::invalid(
            a.resource,
            a.name,
            &[Cause::new(
                "FieldValueInvalid",
                "spec.names.plural",
                format!("Invalid value: {plural:?}: the resource is already served"),
            )],
        ))
    }
}
