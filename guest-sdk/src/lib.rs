//! Write kubewasm reconciler plugins in Rust.
