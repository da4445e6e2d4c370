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
mod sandbox;
mod settings;
mod types;
mod validate;

pub use contract::CONTRACT_VERSION;
pub use engine::{Engine, EngineOptions};
pub use load::{LoadError, Plugin};
pub use sandbox::{CallError, Limits};
pub use settings::{Settings, SettingsError};
pub use types::{Event, EventType, KindRef, LabelOperator, Manifest, Query, Request, Requirement, Response, Selector};
pub use validate::{Refusal, validate};
