//! Write kubewasm plugins in Rust.
//!
//! A plugin is a type implementing [`Reconciler`] (level-based: what should exist for a
//! parent) or [`Handler`] (edge-based: each change of the objects it watches), and one
//! export line: [`export_reconciler!`], [`export_handler!`], or [`export_plugin!`] for
//! both. Build it with `cargo build --target wasm32-wasip2` and drop the `.wasm` file
//! into the host's plugin directory. Reach the outside with [`http`], within what the
//! operator grants. Default, validate and convert the writes of its kinds with
//! [`Admission`]. Test it natively with [`testing`]: the same decoding, call and
//! encoding code runs there as in the WebAssembly export.
//!
//! ```no_run
//! use kubewasm_sdk::prelude::*;
//! use kubewasm_sdk::k8s_openapi::api::core::v1::ConfigMap;
//!
//! struct Echo;
//!
//! impl Reconciler for Echo {
//!     fn describe() -> Manifest {
//!         Manifest::new("echo", KindRef::namespaced("example.com", "v1", "Echo", "echoes"))
//!             .child(KindRef::of::<ConfigMap>())
//!     }
//!
//!     fn reconcile(req: &Request) -> Result<Response, Error> {
//!         let cm = ConfigMap {
//!             metadata: req.parent().child_meta(req.parent().name()),
//!             data: Some([("said".to_string(), req.parent().spec()["say"].to_string())].into()),
//!             ..Default::default()
//!         };
//!         Ok(Response::new().child(&cm)?)
//!     }
//! }
//!
//! kubewasm_sdk::export_reconciler!(Echo);
//! ```
//!
//! An event handler:
//!
//! ```no_run
//! use kubewasm_sdk::prelude::*;
//! use kubewasm_sdk::k8s_openapi::api::core::v1::Pod;
//!
//! struct Notify;
//!
//! impl Handler for Notify {
//!     fn describe() -> Manifest {
//!         Manifest::handler("notify").watch(Watch::new(KindRef::of::<Pod>())).outbound("https://hooks.example.com")
//!     }
//!
//!     fn handle(event: &ObjectEvent) -> Result<(), Error> {
//!         let text = format!("{} {} {}", event.change, event.kind.kind, event.object.name());
//!         let response = kubewasm_sdk::http::post("https://hooks.example.com/notify").body(text).send()?;
//!         if response.is_success() { Ok(()) } else { Err(Error::retryable(format!("answered {}", response.status))) }
//!     }
//! }
//!
//! kubewasm_sdk::export_handler!(Notify);
//! ```
//!
//! A reconciler that also defaults and validates the writes of its kind, as Kubebuilder's
//! webhooks do ([`Admission`]; the manifest names the writes):
//!
//! ```no_run
//! use kubewasm_sdk::prelude::*;
//!
//! struct Tasks;
//!
//! fn task() -> KindRef {
//!     KindRef::namespaced("example.com", "v1", "Task", "tasks")
//! }
//!
//! impl Reconciler for Tasks {
//!     fn describe() -> Manifest {
//!         Manifest::new("tasks", task()).defaults(AdmissionRule::new(task())).validates(AdmissionRule::new(task()))
//!     }
//!
//!     fn reconcile(_: &Request) -> Result<Response, Error> {
//!         Ok(Response::new())
//!     }
//! }
//!
//! impl Admission for Tasks {
//!     fn default(request: &AdmissionRequest) -> Result<Defaulted, Denial> {
//!         match &request.object {
//!             Some(task) if task.spec()["priority"].is_null() => Ok(Defaulted::patch(
//!                 kubewasm_sdk::serde_json::json!([{"op": "add", "path": "/spec/priority", "value": 1}]),
//!             )),
//!             _ => Ok(Defaulted::unchanged()),
//!         }
//!     }
//!
//!     fn validate(request: &AdmissionRequest) -> Verdict {
//!         let name = request.name.as_str();
//!         Verdict::invalid((name.len() > 40).then(|| ("metadata.name", "must be no more than 40 characters")))
//!     }
//! }
//!
//! kubewasm_sdk::export_plugin!(reconciler: Tasks, admission: Tasks);
//! ```

#![warn(clippy::pedantic)]
// Accessors like `Object::name` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate, clippy::missing_panics_doc)]

pub mod conditions;
#[cfg(feature = "crd")]
pub mod crd;
#[doc(hidden)]
pub mod export;
pub mod http;
pub mod log;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

// The contract's types are the host's own: one crate, so the host and the SDK agree on
// every field and on which answers are valid.
pub use kubewasm_contract::{
    AdmissionRequest, AdmissionRule, Change, ConversionRequest, Defaulted, Denial, Error, Event, EventType, FieldCause,
    KindRef, LabelOperator, Limits, Manifest, Mutation, Object, ObjectEvent, Operation, Query, Refusal, Request,
    Requirement, Response, Selector, UserInfo, Verdict, Watch,
};

pub use k8s_openapi;
pub use serde_json;

/// The names a plugin needs, in one `use`.
pub mod prelude {
    #[cfg(feature = "crd")]
    pub use crate::crd::{CrdKind, CrdManifest};
    pub use crate::{
        Admission, AdmissionRequest, AdmissionRule, Change, Defaulted, Denial, Error, Event, Handler, KindRef,
        Manifest, Object, ObjectEvent, Operation, Query, Reconciler, Request, Response, Selector, Verdict, Watch,
    };
}

/// The decision logic of a reconciler: what should exist for one parent.
///
/// Every method is an associated function: the host runs each call in a fresh
/// instance, so a plugin has no state to keep between calls.
pub trait Reconciler {
    /// What the plugin reconciles, what it may own and read. Called once at load.
    fn describe() -> Manifest;

    /// Related objects to hand to [`Reconciler::reconcile`] for this parent.
    /// The default asks for none.
    fn related(parent: &Object) -> Vec<Query> {
        let _ = parent;
        Vec::new()
    }

    /// Decide the full desired set of children (and status, events...) for one parent.
    ///
    /// # Errors
    ///
    /// Return [`Error::retryable`] when trying again later may succeed, and
    /// [`Error::permanent`] when the parent itself is wrong.
    fn reconcile(req: &Request) -> Result<Response, Error>;
}

/// The logic of an event handler: each change of the objects its manifest
/// [`watch`](Manifest::watch)es, in order per object.
///
/// Every method is an associated function: each call runs in a fresh instance.
pub trait Handler {
    /// What the plugin watches (and reaches). Called once at load.
    fn describe() -> Manifest;

    /// Handle one change. The host delivers the object's next change only once this one
    /// is accepted.
    ///
    /// # Errors
    ///
    /// [`Error::retryable`]: the host delivers the same event again with backoff (its
    /// [`ObjectEvent::attempt`] counting up, its delivery id unchanged), and the object's
    /// later changes wait. [`Error::permanent`]: the host gives up on this event, records a
    /// Warning on the object, and moves on.
    fn handle(event: &ObjectEvent) -> Result<(), Error>;
}

/// Admission and conversion of the plugin's kinds: what Kubebuilder's defaulting,
/// validating and conversion webhooks do, for the writes the manifest names in
/// [`defaults`](Manifest::defaults) and [`validates`](Manifest::validates) and the
/// versions of its parent when it [`converts`](Manifest::converts).
///
/// Each method has a default that changes and refuses nothing, so a plugin writes only
/// what its manifest declares. Every call runs in a fresh instance.
pub trait Admission {
    /// Complete a write before it is stored (fill in defaults).
    ///
    /// # Errors
    ///
    /// A [`Denial`] refuses the write.
    fn default(request: &AdmissionRequest) -> Result<Defaulted, Denial> {
        let _ = request;
        Ok(Defaulted::unchanged())
    }

    /// Allow or refuse a write, after the defaults and the schema were applied.
    fn validate(request: &AdmissionRequest) -> Verdict {
        let _ = request;
        Verdict::allow()
    }

    /// Convert one object of the parent's kind to `desired_api_version` (`group/version`).
    /// Only labels and annotations of its `metadata` may change.
    ///
    /// # Errors
    ///
    /// A message that fails the read or write needing the conversion.
    fn convert(object: &Object, desired_api_version: &str) -> Result<serde_json::Value, String> {
        let _ = desired_api_version;
        Err(format!("this plugin converts no objects, and was asked to convert a {}", object.kind()))
    }
}

/// Generated bindings of the `kubewasm:reconciler` world.
#[doc(hidden)]
#[allow(clippy::all, clippy::pedantic)] // generated code
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_plugin",
        default_bindings_module: "kubewasm_sdk::bindings",
    });
}

/// Export a [`Reconciler`] as the plugin's implementation of the contract (its
/// manifest names a parent and no watches).
///
/// The export exists only in WebAssembly builds: a native build (`cargo test` of a
/// `cdylib` plugin) has no component to export, and its unit tests go through
/// [`testing`] instead.
#[macro_export]
macro_rules! export_reconciler {
    ($reconciler:ty) => {
        $crate::__export!(
            $crate::export::Reconciles<$reconciler>,
            $crate::export::Reconciles<$reconciler>,
            $crate::export::NoHandler,
            $crate::export::NoAdmission
        );
    };
}

/// Export a [`Handler`] as the plugin's implementation of the contract (its manifest
/// names watches and no parent).
#[macro_export]
macro_rules! export_handler {
    ($handler:ty) => {
        $crate::__export!(
            $crate::export::Handles<$handler>,
            $crate::export::NoReconciler,
            $crate::export::Handles<$handler>,
            $crate::export::NoAdmission
        );
    };
}

/// Export a plugin that reconciles and also handles events, admits writes, or both; the
/// [`Reconciler`]'s manifest, which names the parent, the watches and the admission
/// rules, is the plugin's.
///
/// ```ignore
/// kubewasm_sdk::export_plugin!(reconciler: CronJobs, admission: CronJobs);
/// ```
#[macro_export]
macro_rules! export_plugin {
    (reconciler: $reconciler:ty, handler: $handler:ty $(,)?) => {
        $crate::__export!(
            $crate::export::Reconciles<$reconciler>,
            $crate::export::Reconciles<$reconciler>,
            $crate::export::Handles<$handler>,
            $crate::export::NoAdmission
        );
    };
    (reconciler: $reconciler:ty, admission: $admission:ty $(,)?) => {
        $crate::__export!(
            $crate::export::Reconciles<$reconciler>,
            $crate::export::Reconciles<$reconciler>,
            $crate::export::NoHandler,
            $crate::export::Admits<$admission>
        );
    };
    (reconciler: $reconciler:ty, handler: $handler:ty, admission: $admission:ty $(,)?) => {
        $crate::__export!(
            $crate::export::Reconciles<$reconciler>,
            $crate::export::Reconciles<$reconciler>,
            $crate::export::Handles<$handler>,
            $crate::export::Admits<$admission>
        );
    };
}

/// The component's four exports, from the types of [`export`] that implement
/// `DescribeExport`, `ReconcileExport`, `HandleExport` and `AdmissionExport`.
#[doc(hidden)]
#[macro_export]
macro_rules! __export {
    ($describe:ty, $reconciler:ty, $handler:ty, $admission:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        struct __KubewasmExport;

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::kubewasm::reconciler::plugin_info::Guest for __KubewasmExport {
            fn describe() -> $crate::bindings::kubewasm::reconciler::types::Manifest {
                <$describe as $crate::export::DescribeExport>::describe()
            }
        }

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::kubewasm::reconciler::reconciler::Guest for __KubewasmExport {
            fn related(
                parent: ::std::string::String,
            ) -> ::std::vec::Vec<$crate::bindings::kubewasm::reconciler::types::Query> {
                <$reconciler as $crate::export::ReconcileExport>::related(parent)
            }
            fn reconcile(
                request: $crate::bindings::kubewasm::reconciler::types::Request,
            ) -> ::std::result::Result<
                $crate::bindings::kubewasm::reconciler::types::Response,
                $crate::bindings::kubewasm::reconciler::types::ReconcileError,
            > {
                <$reconciler as $crate::export::ReconcileExport>::reconcile(request)
            }
        }

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::kubewasm::reconciler::handler::Guest for __KubewasmExport {
            fn handle(
                event: $crate::bindings::kubewasm::reconciler::types::ObjectEvent,
            ) -> ::std::result::Result<(), $crate::bindings::kubewasm::reconciler::types::ReconcileError> {
                <$handler as $crate::export::HandleExport>::handle(event)
            }
        }

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::kubewasm::reconciler::admission::Guest for __KubewasmExport {
            fn default(
                request: $crate::bindings::kubewasm::reconciler::types::AdmissionRequest,
            ) -> ::std::result::Result<
                $crate::bindings::kubewasm::reconciler::types::Defaulted,
                $crate::bindings::kubewasm::reconciler::types::Denial,
            > {
                <$admission as $crate::export::AdmissionExport>::default(request)
            }
            fn validate(
                request: $crate::bindings::kubewasm::reconciler::types::AdmissionRequest,
            ) -> $crate::bindings::kubewasm::reconciler::types::Verdict {
                <$admission as $crate::export::AdmissionExport>::validate(request)
            }
            fn convert(
                request: $crate::bindings::kubewasm::reconciler::types::ConversionRequest,
            ) -> ::std::result::Result<::std::vec::Vec<::std::string::String>, ::std::string::String> {
                <$admission as $crate::export::AdmissionExport>::convert(request)
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_plugin!(__KubewasmExport with_types_in $crate::bindings);
    };
}
