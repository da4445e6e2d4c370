//! Plugins: load a component, check it against the contract, describe it, and run
//! reconciles in a fresh sandbox per call.
//!
//! Costs, from most to least expensive: an [`Engine`] is created once per process; a
//! [`Plugin`] once per `.wasm` file (it compiles the component, ~100 ms); each call
//! ([`Plugin::reconcile`], [`Plugin::related`]) instantiates afresh (~50 µs), so
//! nothing a plugin does survives to the next call.

mod contract;
pub mod directory;
mod engine;
mod load;
mod pool;
mod sandbox;
mod settings;

pub use contract::{CONTRACT_VERSION, MalformedAnswer};
pub use engine::{Engine, EngineOptions};
pub use load::{LoadError, Plugin, Reconciled};
pub use pool::PoolSlots;
pub use sandbox::{CallError, Limits};
pub use settings::{InvalidSettings, Settings, SettingsError};
// The contract's types and the check of an answer live in one crate the SDK shares, so
// a plugin's native tests refuse exactly what the host refuses.
pub use kubewasm_contract::{
    Event, EventType, KindRef, LabelOperator, Limits as DeclaredLimits, Manifest, Query, Refusal, Request, Requirement,
    Response, Selector, validate, view,
};
