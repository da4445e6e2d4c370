//! Structured logging into the host's logs, with the plugin and parent attached there.
//!
//! In a native `cargo test` the lines go to stderr and are kept for
//! [`crate::testing::Outcome::logs`].

pub use crate::bindings::kubewasm::reconciler::log::Level;

/// One logged line: level, message, fields.
pub type Line = (Level, String, Vec<(String, String)>);

/// Log `message` with key/value `fields`.
pub fn log(level: Level, message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> = fields.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    emit(level, message, fields);
}

pub fn debug(message: &str) {
    log(Level::Debug, message, &[]);
}

pub fn info(message: &str) {
    log(Level::Info, message, &[]);
}

pub fn warn(message: &str) {
    log(Level::Warn, message, &[]);
}

pub fn error(message: &str) {
    log(Level::Error, message, &[]);
}

#[cfg(target_arch = "wasm32")]
fn emit(level: Level, message: &str, fields: Vec<(String, String)>) {
    crate::bindings::kubewasm::reconciler::log::log(level, message, &fields);
}

#[cfg(not(target_arch = "wasm32"))]
fn emit(level: Level, message: &str, fields: Vec<(String, String)>) {
    eprintln!("[{level:?}] {message} {fields:?}");
    native::CAPTURED.with(|c| c.borrow_mut().push((level, message.to_string(), fields)));
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod native {
    use std::cell::RefCell;

    thread_local! {
        pub(crate) static CAPTURED: RefCell<Vec<super::Line>> =
            const { RefCell::new(Vec::new()) };
    }
}
