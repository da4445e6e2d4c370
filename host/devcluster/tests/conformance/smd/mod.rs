//! Server-side apply conformance from its reference implementation: the scenarios of
//! kubernetes-sigs/structured-merge-diff's `merge/*_test.go`, one module per upstream file. See
//! README.md beside this file for the count and the scenarios that cannot be expressed.

mod harness;

mod deduced;
mod default_keys;
mod duplicates;
mod field_level_overrides;
mod key;
mod leaf;
mod multiple_appliers;
mod nested;
mod preserve_unknown;
mod schema_change;
mod set;
