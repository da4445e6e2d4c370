//! The embedded Kubernetes API server of `kubewasm dev` and of the end-to-end tests.
