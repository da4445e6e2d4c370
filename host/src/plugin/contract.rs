//! The `kubewasm:reconciler` contract as seen by the host: generated bindings, the
//! supported version, and what is wrong with an answer that cannot be decoded. The
//! conversions between the WIT records and the contract's types are the contract
//! crate's own table (`kubewasm_contract::wit_conversions!`), shared with the SDK.

/// Generated from `wit/`: the `Plugin` world and its `PluginPre`.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
    });
}

pub use bindings::kubewasm::reconciler::types as wit;

kubewasm_contract::wit_conversions!(bindings::kubewasm::reconciler::types);

/// The contract version this host implements; components built against another
/// version are refused at load.
pub const CONTRACT_VERSION: &str = "0.1.0";

/// The name of the export every plugin must provide, without its version.
pub const EXPORT_PREFIX: &str = "kubewasm:reconciler/reconciler@";

/// What is wrong with an answer that cannot be decoded.
#[derive(Debug, thiserror::Error)]
pub enum MalformedAnswer {
    /// One of the JSON texts (a child or the status) does not parse.
    #[error(transparent)]
    NotJson(#[from] kubewasm_contract::wit::NotJson),
    /// `related` asked for a kind outside the manifest's `related` list.
    #[error("related query for {kind} which the manifest does not declare in `related`")]
    UndeclaredRelated { kind: String },
}
