//! kubewasm: Kubernetes controllers whose reconcile logic is a sandboxed WebAssembly
//! component.
//!
//! Start with [`plugin::Plugin`]: it loads a component, checks it against the
//! contract in `wit/`, and runs one reconcile in a fresh sandbox.

#![warn(clippy::pedantic)]
// Accessors like `Plugin::manifest` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate)]

pub mod controller;
pub mod coordination;
pub mod health;
pub mod logging;
pub mod metrics;
pub mod plugin;
pub mod run;
pub mod runtime;
