//! Admission and conversion webhooks: the plugins that default, validate or convert, served
//! to the API server over HTTPS and registered with it. The API server calls the host; the
//! host calls the plugin's `default`, `validate` or `convert`.
//!
//! [`tls`] is the server's identity and the CA bundle the API server trusts it by;
//! [`register`] turns the loaded plugins into the webhook configurations and CRD conversions
//! that point the API server at the server, and keeps them in step; `served` is the table
//! of the plugins' current versions the runtime keeps up to date; `review` turns the API
//! server's reviews into the contract's requests and the plugins' answers into reviews;
//! `serve` is the HTTPS server between them; `follow` starts it when a plugin needs it and
//! registers the plugins at every change. Imports go one way: `follow` stands on `serve`
//! and `register`, `serve` on `review` and `served`, and all of them on the plugin room.

mod follow;
pub mod register;
mod review;
mod serve;
mod served;
pub mod tls;

pub use follow::{FollowError, Following, WebhookOptions, follow};
pub use review::{BadAnswer, BadReview};
pub use serve::{Error, Server, serve};
pub use served::{Served, Webhooks};
