//! A parent's `status.conditions`, kept as Kubernetes keeps them.
//!
//! The same rules as apimachinery's `meta.SetStatusCondition` and its siblings, which
//! Kubebuilder controllers use: a condition's `lastTransitionTime` moves only when its
//! status changes, its reason, message and `observedGeneration` are overwritten in place,
//! and the order of the list is kept. The plugin's answer is the whole status, so the list
//! starts from the observed parent's ([`Conditions::from_status`]); "now" is the request's
//! [`Request::now`](crate::Request::now), never a clock of the guest's.
//!
//! ```
//! use kubewasm_sdk::conditions::{Conditions, NewCondition};
//! # use kubewasm_sdk::{Object, Error};
//! # fn status(parent: &Object, now: kubewasm_sdk::k8s_openapi::jiff::Timestamp) -> Result<serde_json::Value, Error> {
//! let mut conditions = Conditions::from_status(parent.status())?;
//! conditions.set(
//!     NewCondition::new("Ready", true).reason("Available").message("2 of 2 replicas ready")
//!         .observed_generation(parent.generation()),
//!     now,
//! )?;
//! Ok(serde_json::json!({ "conditions": conditions }))
//! # }
//! ```

use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use crate::Error;

/// A condition's status: `True`, `False` or `Unknown`. A `bool` converts to the first two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    True,
    False,
    Unknown,
}

impl Status {
    /// The text the API server keeps.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

impl From<bool> for Status {
    fn from(value: bool) -> Self {
        if value { Status::True } else { Status::False }
    }
}

impl FromStr for Status {
    type Err = Error;

    /// Exactly `True`, `False` or `Unknown`, as the API server's schema for a condition.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "True" => Ok(Status::True),
            "False" => Ok(Status::False),
            "Unknown" => Ok(Status::Unknown),
            _ => Err(Error::permanent(format!("condition status \"{s}\" must be True, False or Unknown"))),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A condition to [`Conditions::set`]: its type and status, then what the builder adds.
#[derive(Clone, Debug, PartialEq)]
pub struct NewCondition {
    type_: String,
    status: Status,
    reason: String,
    message: String,
    observed_generation: Option<i64>,
    last_transition_time: Option<Timestamp>,
}

impl NewCondition {
    /// A condition of `type_` (`Ready`, `example.com/Synced`) with `status` (`true`,
    /// `false` or [`Status::Unknown`]). Give it a [`reason`](Self::reason): the API server
    /// requires one.
    pub fn new(type_: impl Into<String>, status: impl Into<Status>) -> Self {
        Self {
            type_: type_.into(),
            status: status.into(),
            reason: String::new(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: None,
        }
    }

    /// Why the condition is as it is, in `UpperCamelCase` (letters, digits, `_`, `,`, `:`).
    #[must_use]
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }

    /// Details for people.
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// The parent's `metadata.generation` this condition was decided from
    /// ([`Object::generation`](crate::Object::generation)).
    #[must_use]
    pub fn observed_generation(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }

    /// The time of the transition, when it is known better than "now" (it is used only
    /// when the condition is added or its status changes).
    #[must_use]
    pub fn last_transition_time(mut self, time: Timestamp) -> Self {
        self.last_transition_time = Some(time);
        self
    }

    /// What the API server would refuse of this condition, said before it is written.
    fn check(&self) -> Result<(), Error> {
        let (type_, reason) = (&self.type_, &self.reason);
        if !valid_type(type_) {
            return Err(Error::permanent(format!(
                "condition type \"{type_}\" is not valid: a name of letters, digits, '-', '_' and '.' \
                 beginning and ending with a letter or digit, optionally prefixed by a lowercase DNS \
                 subdomain and '/', at most 316 characters"
            )));
        }
        if !valid_reason(reason) {
            return Err(Error::permanent(format!(
                "condition {type_}: reason \"{reason}\" is not valid: it must begin with a letter, hold \
                 only letters, digits, '_', ',' and ':', end with a letter, digit or '_', and be at most \
                 1024 characters"
            )));
        }
        if self.message.len() > MAX_MESSAGE {
            return Err(Error::permanent(format!(
                "condition {type_}: message is longer than {MAX_MESSAGE} characters"
            )));
        }
        Ok(())
    }
}

const MAX_MESSAGE: usize = 32768;

/// `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`,
/// at most 316 characters: `metav1.Condition`'s `type`.
fn valid_type(type_: &str) -> bool {
    let (prefix, name) = match type_.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, type_),
    };
    let ends_alphanumeric =
        |s: &str, f: fn(&u8) -> bool| s.as_bytes().first().is_some_and(f) && s.as_bytes().last().is_some_and(f);
    let label_ok = |label: &str| {
        ends_alphanumeric(label, |b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    type_.len() <= 316
        && prefix.is_none_or(|p| p.split('.').all(label_ok))
        && ends_alphanumeric(name, u8::is_ascii_alphanumeric)
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, 1 to 1024 characters: `metav1.Condition`'s `reason`.
fn valid_reason(reason: &str) -> bool {
    let bytes = reason.as_bytes();
    bytes.len() <= 1024
        && bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.last().is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':'))
}

/// A list of conditions, as `status.conditions` holds it. Serializes as that list.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Conditions(Vec<Condition>);

impl Conditions {
    /// No conditions.
    pub fn new() -> Self {
        Self::default()
    }

    /// The conditions of an observed status (`req.parent().status()`): none when the
    /// status or its `conditions` is absent.
    ///
    /// # Errors
    ///
    /// `status.conditions` is not a list of conditions (one without `lastTransitionTime`,
    /// a field of the wrong type).
    pub fn from_status(status: &Value) -> Result<Self, Error> {
        match status.get("conditions") {
            None | Some(Value::Null) => Ok(Self::new()),
            Some(list) => parse_list(list).map(Self),
        }
    }

    /// The conditions, in order.
    pub fn as_slice(&self) -> &[Condition] {
        &self.0
    }

    /// The first condition of `type_`.
    pub fn find(&self, type_: &str) -> Option<&Condition> {
        self.0.iter().find(|c| c.type_ == type_)
    }

    /// Whether the condition of `type_` is present and `True`.
    pub fn is_true(&self, type_: &str) -> bool {
        self.find(type_).is_some_and(|c| c.status == "True")
    }

    /// Whether the condition of `type_` is present and `False` (an absent one is neither).
    pub fn is_false(&self, type_: &str) -> bool {
        self.find(type_).is_some_and(|c| c.status == "False")
    }

    /// Sets the condition of its type, and says whether the list changed. An absent type is
    /// appended with `lastTransitionTime` the condition's own or `now`; a present one takes
    /// the new status (and that time) only when the status differs, and the new reason,
    /// message and `observedGeneration` always.
    ///
    /// # Errors
    ///
    /// The condition's type or reason does not match what the API server accepts, or its
    /// message is too long: it names the field and the value. The list is then unchanged.
    pub fn set(&mut self, condition: NewCondition, now: Timestamp) -> Result<bool, Error> {
        condition.check()?;
        let time = Time(condition.last_transition_time.unwrap_or(now));
        let Some(existing) = self.0.iter_mut().find(|c| c.type_ == condition.type_) else {
            self.0.push(Condition {
                type_: condition.type_,
                status: condition.status.as_str().to_string(),
                reason: condition.reason,
                message: condition.message,
                observed_generation: condition.observed_generation,
                last_transition_time: time,
            });
            return Ok(true);
        };
        let mut changed = false;
        if existing.status != condition.status.as_str() {
            existing.status = condition.status.as_str().to_string();
            existing.last_transition_time = time;
            changed = true;
        }
        changed |= replace(&mut existing.reason, condition.reason);
        changed |= replace(&mut existing.message, condition.message);
        changed |= replace(&mut existing.observed_generation, condition.observed_generation);
        Ok(changed)
    }

    /// Removes every condition of `type_`, keeping the order of the rest; says whether
    /// one was there.
    pub fn remove(&mut self, type_: &str) -> bool {
        let before = self.0.len();
        self.0.retain(|c| c.type_ != type_);
        self.0.len() != before
    }
}

impl From<Conditions> for Vec<Condition> {
    fn from(conditions: Conditions) -> Self {
        conditions.0
    }
}

impl From<Vec<Condition>> for Conditions {
    fn from(conditions: Vec<Condition>) -> Self {
        Self(conditions)
    }
}

/// Sets `slot` to `value`; whether it differed.
fn replace<T: PartialEq>(slot: &mut T, value: T) -> bool {
    if *slot == value {
        return false;
    }
    *slot = value;
    true
}

/// The observed list, or an error that says which item is not a condition.
fn parse_list(value: &Value) -> Result<Vec<Condition>, Error> {
    let Value::Array(items) = value else {
        return Err(Error::permanent(format!("status.conditions is not a list: {value}")));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value(item.clone())
                .map_err(|e| Error::permanent(format!("status.conditions[{i}] is not a condition: {e}")))
        })
        .collect()
}
