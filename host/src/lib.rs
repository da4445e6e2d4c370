//! kubewasm: Kubernetes controllers whose reconcile logic is a sandboxed WebAssembly
//! component.
//!
//! Where to start: a [`Plugin`] is a component loaded by an [`Engine`], whose calls run
//! in a fresh sandbox; a [`Controller`] runs one plugin against a cluster; a [`Runtime`]
//! runs the plugins of a directory and follows its changes; [`run::run`] is the whole
//! of `kubewasm run`.
//!
//! The modules are layers, and imports go down only: [`run`] (the long-running host)
//! stands on [`runtime`] (the plugins and their runners), which stands on
//! [`controller`] (one plugin as a Kubernetes controller), which stands on [`plugin`]
//! (a component, its engine and its sandbox); [`coordination`] (several replicas),
//! [`metrics`], [`health`] and [`logging`] serve them from the side; [`distribution`]
//! (plugins pushed to and pulled from OCI registries, and their signatures) stands on
//! [`plugin`] alone; [`resource`] (the `Plugin` kind: a plugin taken from a registry)
//! stands on both.

#![warn(clippy::pedantic)]
// Accessors like `Plugin::manifest` have nothing to add beyond their name.
#![allow(clippy::must_use_candidate)]

pub mod controller;
pub mod coordination;
pub mod discovery;
pub mod distribution;
pub(crate) mod events;
pub mod handler;
pub mod health;
pub mod logging;
mod memory;
pub mod metrics;
pub mod plugin;
pub mod resource;
pub mod run;
pub mod runtime;
pub mod secrets;
mod serving;
pub mod webhook;

pub use controller::Controller;
pub use plugin::{Engine, Plugin};
pub use runtime::Runtime;
