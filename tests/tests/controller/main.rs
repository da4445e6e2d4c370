//! The controller host end to end: the embedded API server, the real plugins built
//! to wasm32-wasip2 (`make plugins`), and the host reconciling between them.

mod demo_application;
mod finalizer;
mod foo;
mod harness;
mod hostile;
mod hot_reload;
mod identities;
mod in_flight;
mod isolation;
mod keep_unlisted;
mod pod_services;
mod rbac;
mod run;
mod shared_caches;
mod stack;
mod status;
mod steady_state;
mod uncaught;
