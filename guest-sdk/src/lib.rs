//! Write kubewasm reconciler plugins in Rust.
//!
//! A plugin is one type implementing [`Reconciler`] and one [`export_reconciler!`] line.
//! Build it with `cargo build --target wasm32-wasip2` and drop the `.wasm` file into the
//! host's plugin directory. Test it natively with [`testing`]: the same decoding,
//! reconcile and encoding code runs there as in the WebAssembly export.
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

#![warn(clippy::pedantic)]
// Accessors like `Object::name` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate, clippy::missing_panics_doc)]

#[doc(hidden)]
pub mod export;
pub mod log;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

// The contract's types are the host's own: one crate, so the host and the SDK agree on
// every field and on which answers are valid.
pub use kubewasm_contract::{
    Error, Event, EventType, KindRef, LabelOperator, Limits, Manifest, Object, Query, Refusal, Request, Requirement,
    Response, Selector,
};

pub use k8s_openapi;
pub use serde_json;

/// The names a plugin needs, in one `use`.
pub mod prelude {
    pub use crate::{Error, Event, KindRef, Manifest, Object, Query, Reconciler, Request, Response, Selector};
}

/// The decision logic of one plugin.
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

/// Export a [`Reconciler`] as the plugin's implementation of the contract.
///
/// The export exists only in WebAssembly builds: a native build (`cargo test` of a
/// `cdylib` plugin) has no component to export, and its unit tests go through
/// [`testing`] instead.
#[macro_export]
macro_rules! export_reconciler {
    ($reconciler:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        struct __KubewasmExport;

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::kubewasm::reconciler::plugin_info::Guest
            for __KubewasmExport
        {
            fn describe() -> $crate::bindings::kubewasm::reconciler::types::Manifest {
                $crate::export::describe::<$reconciler>()
            }
        }

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::kubewasm::reconciler::handler::Guest
            for __KubewasmExport
        {
            fn handle(
                event: $crate::bindings::kubewasm::reconciler::types::ObjectEvent,
            ) -> ::std::result::Result<(), $crate::bindings::kubewasm::reconciler::types::ReconcileError> {
                $crate::export::no_handler(event)
            }
        }

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::kubewasm::reconciler::reconciler::Guest
            for __KubewasmExport
        {
            fn related(
                parent: ::std::string::String,
            ) -> ::std::vec::Vec<$crate::bindings::kubewasm::reconciler::types::Query> {
                $crate::export::related::<$reconciler>(parent)
            }
            fn reconcile(
                request: $crate::bindings::kubewasm::reconciler::types::Request,
            ) -> ::std::result::Result<
                $crate::bindings::kubewasm::reconciler::types::Response,
                $crate::bindings::kubewasm::reconciler::types::ReconcileError,
            > {
                $crate::export::reconcile::<$reconciler>(request)
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_plugin!(__KubewasmExport with_types_in $crate::bindings);
    };
}
