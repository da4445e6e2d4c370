//! The `Plugin` resource (`kubewasm.io/v1alpha1`, cluster-scoped): a plugin an operator
//! asks for by its OCI reference, verification keys and settings, instead of a file in
//! the plugin directory. [`crd`] defines the kind, [`source`] turns a spec into a loaded
//! plugin (pull, verify, compile, describe), [`status`] says how that went as conditions.
//! The runtime follows the objects with these (`runtime/resources.rs`, `kubewasm run
//! --plugin-resources`).

pub mod crd;
pub mod source;
pub mod status;

pub use crd::{Condition, PluginSpec, RollbackSpec, RolloutMode, RolloutSpec};
pub use source::{Context, Failure, Fetched, Step, fetch};
