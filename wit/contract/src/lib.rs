//! The `kubewasm:reconciler` contract in Rust, written once for both sides: the host
//! decodes a plugin's answer into these types and checks it with [`validate`]; the
//! SDK builds them, and its test harness runs the very same check, so a plugin whose
//! native tests pass is not refused by the host. Beside a reconcile's [`Request`] and
//! [`Response`], an event handler's [`ObjectEvent`], the outbound [`HttpRequest`], and an admission
//! webhook's [`AdmissionRequest`], [`Defaulted`] and [`Verdict`].
//!
//! [`view`] says what a plugin is shown of the cluster, for the host's controllers,
//! `kubewasm render` and the SDK's tests alike; [`wit`] converts these types from and to
//! the WIT records each side's bindings generate, in one table.

#![warn(clippy::pedantic)]
// Accessors like `Object::name` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate, clippy::missing_panics_doc)]

mod admission;
mod event;
mod http;
mod kind;
mod manifest;
mod object;
mod query;
mod request;
mod response;
mod validate;
pub mod view;
pub mod wit;

pub use admission::{
    AdmissionRequest, AdmissionRule, ConversionRequest, Defaulted, Denial, FieldCause, Mutation, Operation, UserInfo,
    Verdict,
};
pub use event::{Change, ObjectEvent};
pub use http::{HttpError, HttpRequest, HttpResponse};
pub use kind::KindRef;
pub use manifest::{Limits, Manifest, ManifestError, Watch};
pub use object::Object;
pub use query::{LabelOperator, Query, Requirement, Selector};
pub use request::Request;
pub use response::{Error, Event, EventType, Response};
pub use validate::{MAX_OBJECT_BYTES, MAX_RESPONSE_BYTES, Refusal, validate};

pub use k8s_openapi;
