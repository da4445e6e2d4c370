//! Objects converted between the versions of their resource, as apiextensions-apiserver
//! converts custom resources on every read and write: with the `None` strategy only
//! `apiVersion` changes; with a conversion webhook the objects of other versions go to it in one
//! `ConversionReview` (`Converter`). Either way the result is pruned by the target version's
//! schema (a field only another version knows does not survive).
//!
//! A webhook is a network call: a [`Conversion`] is prepared under the cluster's lock (the
//! webhook's address found) and run with the cluster unlocked.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use super::status::ApiError;
use super::strategy::{Converter, Resource};
use super::webhook::{Endpoint, ServiceRef};

/// How the objects of one resource convert, ready to run without the lock.
#[derive(Clone)]
pub(crate) struct Conversion {
    rt: Arc<Resource>,
    /// The conversion webhook, and where it is reached (or why it cannot be).
    webhook: Option<(Arc<dyn Converter>, Result<Endpoint, String>)>,
}

impl Conversion {
    /// The conversion of `rt`'s objects; `address` finds a service reference's address (under
    /// the lock, from the stored Services and endpoints).
    pub(crate) fn prepare(
        rt: &Arc<Resource>,
        address: &dyn Fn(&ServiceRef) -> Result<SocketAddr, String>,
    ) -> Conversion {
        let webhook = rt.converter().map(|converter| {
            let client = converter.client();
            let endpoint = client.endpoint(client.service().map(address));
            (converter.clone(), endpoint)
        });
        Conversion { rt: rt.clone(), webhook }
    }

    /// Whether converting calls a webhook (then it runs without the lock).
    pub(crate) fn remote(&self) -> bool {
        self.webhook.is_some()
    }

    /// `obj` in `version`, pruned by its schema.
    pub(crate) async fn one(&self, obj: &Value, version: &str) -> Result<Value, ApiError> {
        let read = format!("{}, Kind={}", api_version_of(obj), self.rt.kind);
        let mut out = self.convert(vec![obj.clone()], version, &read).await?;
        Ok(out.pop().unwrap_or_default())
    }

    /// The items of a list (or watch) in `version`, pruned by its schema: those of another
    /// version converted in one review.
    pub(crate) async fn list(&self, objects: Vec<Value>, version: &str) -> Result<Vec<Value>, ApiError> {
        let stored = self.rt.api_version(self.rt.storage_version());
        let read = format!("{stored}, Kind={}List", self.rt.kind);
        self.convert(objects, version, &read).await
    }

    async fn convert(&self, objects: Vec<Value>, version: &str, read: &str) -> Result<Vec<Value>, ApiError> {
        let target = self.rt.api_version(version);
        let Some((converter, endpoint)) = &self.webhook else {
            return Ok(objects.iter().map(|o| relabel(&self.rt, version, o)).collect());
        };
        // Only the objects of another version go (an empty object converts locally, as
        // upstream's smoke test of the converter expects).
        let sent: Vec<usize> = (0..objects.len()).filter(|&i| needs_webhook(&objects[i], &target)).collect();
        if sent.is_empty() {
            return Ok(objects.iter().map(|o| relabel(&self.rt, version, o)).collect());
        }
        let endpoint = endpoint
            .as_ref()
            .map_err(|why| ApiError::internal_error(&format!("conversion webhook for {read} failed: {why}")))?;
        let mut answers = converter
            .convert(endpoint, sent.iter().map(|&i| objects[i].clone()).collect(), &target, read)
            .await
            .map_err(|why| ApiError::internal_error(&why))?
            .into_iter();
        let mut out = Vec::with_capacity(objects.len());
        for (i, obj) in objects.iter().enumerate() {
            if sent.contains(&i) {
                let mut c = answers.next().unwrap_or_default();
                self.rt.strategy(version).prune(&mut c);
                out.push(c);
            } else {
                out.push(relabel(&self.rt, version, obj));
            }
        }
        Ok(out)
    }
}

/// The `apiVersion` of an object.
fn api_version_of(obj: &Value) -> &str {
    obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default()
}

/// Whether the webhook converts `obj` to `target`: it is of another version and holds more
/// than `apiVersion` and `kind`.
fn needs_webhook(obj: &Value, target: &str) -> bool {
    let empty = obj.as_object().is_some_and(|m| m.len() == 2 && m.contains_key("apiVersion") && m.contains_key("kind"));
    api_version_of(obj) != target && !empty
}

/// `obj` converted to `version` of `rt` with the `None` strategy: only `apiVersion` changes,
/// then the version's schema prunes it. Right for every resource without a conversion webhook,
/// and for an object already in `version`.
pub(crate) fn relabel(rt: &Resource, version: &str, obj: &Value) -> Value {
    let mut out = obj.clone();
    let target = rt.api_version(version);
    if let Some(map) = out.as_object_mut() {
        map.insert("apiVersion".into(), json!(target));
    }
    if api_version_of(obj) != target {
        rt.strategy(version).prune(&mut out);
    }
    out
}
