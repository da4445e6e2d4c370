//! The one conversion between the contract's WIT records and this crate's types.
//!
//! The host (wasmtime's `bindgen!`) and the SDK (wit-bindgen) each generate Rust records
//! from `wit/`, with the same names and fields but as distinct types. Each invokes
//! [`wit_conversions!`](crate::wit_conversions) once with the path of its generated
//! `types` module; the macro writes, in that crate, `From<&T>` for every WIT record (what
//! a side sends) and `From` or `TryFrom` back (what it receives), field by field through
//! [`Lower`] and [`Lift`]. A new field of the contract is a new name in the table below.
//!
//! Lifting fails only where a record carries JSON text that does not parse ([`NotJson`],
//! naming the field); the records without JSON lift with `From`.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::Object;

/// Lowers a value to the type its WIT record field has.
pub trait Lower<W> {
    fn lower(&self) -> W;
}

/// Lifts a value from the type its WIT record field has; `what` names the field in the
/// error. It reads the record in place, which is dropped whole afterwards, as a hand-written
/// conversion would: a plugin near its memory cap keeps the heap it had.
pub trait Lift<W>: Sized {
    /// [`Infallible`] for values without JSON text, [`NotJson`] otherwise.
    type Error: Located;
    /// # Errors
    ///
    /// [`NotJson`] when JSON text in `wire` does not parse.
    fn lift(wire: &W, what: &str) -> Result<Self, Self::Error>;
}

/// An error that can say which element of a list it came from.
pub trait Located {
    #[must_use]
    fn at(self, index: usize) -> Self;
}

impl Located for Infallible {
    fn at(self, _: usize) -> Self {
        match self {}
    }
}

/// JSON text in a record that does not parse; `what` names the field, e.g. `child #2`.
#[derive(Debug)]
pub struct NotJson {
    pub what: String,
    pub source: serde_json::Error,
}

impl Located for NotJson {
    fn at(mut self, index: usize) -> Self {
        self.what = format!("{} #{index}", self.what);
        self
    }
}

impl From<Infallible> for NotJson {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

impl fmt::Display for NotJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not JSON: {}", self.what, self.source)
    }
}

impl std::error::Error for NotJson {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Values that cross unchanged.
macro_rules! same {
    ($($t:ty),*) => {$(
        impl Lower<$t> for $t {
            fn lower(&self) -> $t {
                self.clone()
            }
        }
        impl Lift<$t> for $t {
            type Error = Infallible;
            fn lift(wire: &$t, _: &str) -> Result<Self, Infallible> {
                Ok(wire.clone())
            }
        }
    )*};
}
same!(String, bool, u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, char, (String, String));

impl<W, T: Lower<W>> Lower<Vec<W>> for Vec<T> {
    fn lower(&self) -> Vec<W> {
        self.iter().map(Lower::lower).collect()
    }
}

impl<W, T: Lift<W>> Lift<Vec<W>> for Vec<T> {
    type Error = T::Error;
    fn lift(wire: &Vec<W>, what: &str) -> Result<Self, T::Error> {
        wire.iter().enumerate().map(|(i, w)| T::lift(w, what).map_err(|e| e.at(i))).collect()
    }
}

impl<W, T: Lower<W>> Lower<Option<W>> for Option<T> {
    fn lower(&self) -> Option<W> {
        self.as_ref().map(Lower::lower)
    }
}

impl<W, T: Lift<W>> Lift<Option<W>> for Option<T> {
    type Error = T::Error;
    fn lift(wire: &Option<W>, what: &str) -> Result<Self, T::Error> {
        wire.as_ref().map(|w| T::lift(w, what)).transpose()
    }
}

/// JSON crosses as text.
impl Lower<String> for Value {
    fn lower(&self) -> String {
        self.to_string()
    }
}

impl Lift<String> for Value {
    type Error = NotJson;
    fn lift(wire: &String, what: &str) -> Result<Self, NotJson> {
        serde_json::from_str(wire).map_err(|source| NotJson { what: what.to_string(), source })
    }
}

impl Lower<String> for Object {
    fn lower(&self) -> String {
        self.json().to_string()
    }
}

impl Lift<String> for Object {
    type Error = NotJson;
    fn lift(wire: &String, what: &str) -> Result<Self, NotJson> {
        Value::lift(wire, what).map(Object::new)
    }
}

/// Maps cross as lists of pairs.
impl Lower<Vec<(String, String)>> for BTreeMap<String, String> {
    fn lower(&self) -> Vec<(String, String)> {
        self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

impl Lift<Vec<(String, String)>> for BTreeMap<String, String> {
    type Error = Infallible;
    fn lift(wire: &Vec<(String, String)>, _: &str) -> Result<Self, Infallible> {
        Ok(wire.iter().cloned().collect())
    }
}

/// Maps of lists (a user's extra attributes) cross as lists of pairs.
impl Lower<Vec<(String, Vec<String>)>> for BTreeMap<String, Vec<String>> {
    fn lower(&self) -> Vec<(String, Vec<String>)> {
        self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

impl Lift<Vec<(String, Vec<String>)>> for BTreeMap<String, Vec<String>> {
    type Error = Infallible;
    fn lift(wire: &Vec<(String, Vec<String>)>, _: &str) -> Result<Self, Infallible> {
        Ok(wire.iter().cloned().collect())
    }
}

/// Durations cross as milliseconds.
impl Lower<u64> for Duration {
    fn lower(&self) -> u64 {
        u64::try_from(self.as_millis()).unwrap_or(u64::MAX)
    }
}

impl Lift<u64> for Duration {
    type Error = Infallible;
    fn lift(wire: &u64, _: &str) -> Result<Self, Infallible> {
        Ok(Duration::from_millis(*wire))
    }
}

/// The conversions between the WIT records of `kubewasm:reconciler` (its `types` and
/// `http` interfaces), generated into the module at the given path, and this crate's
/// types. Invoke it once per crate, where the path resolves:
///
/// ```ignore
/// kubewasm_contract::wit_conversions!(bindings::kubewasm::reconciler);
/// ```
///
/// `wit_conversions!(v0_1_0 path)` converts the records of contract 0.1.0 that are the
/// same in 0.2.0 (everything but the manifest and the response), for a host that runs both.
///
/// Each line of the table says how a type of this crate crosses: `record` (fields of the
/// same names, or `ours = theirs` where they differ; `as "label"` names the field in a
/// [`NotJson`] error), `json record` (a record holding JSON text: it lifts with `TryFrom`
/// instead of `From`), `enum` (cases of the same names) or `variant` (cases with at most
/// one payload each; `json variant` when a payload is JSON text).
#[macro_export]
macro_rules! wit_conversions {
    (v0_1_0 $($wit:ident)::+) => {
        const _: () = {
            use $($wit)::+::types as __wit;
            $crate::__wit_shared_types! {}
        };
    };
    ($($wit:ident)::+) => {
        // The impls apply crate-wide; the blocks only scope the alias of the records' module.
        const _: () = {
            use $($wit)::+::types as __wit;
            $crate::__wit_shared_types! {}
            $crate::__wit_table! {
                json record Response = Response {
                    children as "child", status, labels, annotations, requeue_after = requeue_after_ms, events,
                    finalized, delete,
                }
                record Watch = Watch { kind, label_selector, field_selector }
                record Manifest = Manifest {
                    name, parent, children, related, finalizer, crds, limits, watches, outbound, keep_unlisted,
                    defaults, validates, converts,
                }
                enum Operation = Operation { Create, Update, Delete, Connect }
                record AdmissionRule = AdmissionRule { kind, operations }
                record UserInfo = UserInfo { username, uid, groups, extra }
                json record AdmissionRequest = AdmissionRequest {
                    uid, kind, operation, sub_resource, namespace, name, object, old_object as "old object",
                    user_info, dry_run, options, now, config,
                }
                record FieldCause = FieldCause { field, message, reason }
                record Denial = Denial { message, causes }
                record Verdict = Verdict { denied, warnings }
                json variant Mutation = Mutation { Unchanged, Object(object), Patch(patch) }
                json record Defaulted = Defaulted { mutation, warnings }
                json record ConversionRequest = ConversionRequest {
                    objects as "object", desired_api_version, now, config,
                }
                enum Change = Change { Added, Updated, Deleted }
                json record ObjectEvent = ObjectEvent {
                    change, kind, object, old_object as "old object", initial, final_state_unknown, delivery_id,
                    attempt, now, config,
                }
            }
        };
        const _: () = {
            use $($wit)::+::http as __wit;
            $crate::__wit_table! {
                record HttpRequest = HttpRequest { method, url, headers, body, timeout_ms }
                record HttpResponse = HttpResponse { status, headers, body }
                variant HttpError = HttpError {
                    Denied(message), Timeout(message), TooLarge(message), TooManyRequests(message), Failed(message),
                }
            }
        };
    };
}

/// The records of `types` that contract versions 0.1.0 and 0.2.0 share.
#[doc(hidden)]
#[macro_export]
macro_rules! __wit_shared_types {
    () => {
        $crate::__wit_table! {
            record KindRef = KindRef { group, version, kind, plural, namespaced }
            record Limits = Limits { deadline_ms, memory_mib }
            enum LabelOperator = LabelOperator { In, NotIn, Exists, DoesNotExist }
            record Requirement = LabelRequirement { key, operator, values }
            variant Selector = Selector { All, Names(names), Labels(requirements) }
            record Query = Query { kind, namespace, selector }
            json record Request = Request {
                parent, children as "child", related as "related object", finalizing, now, config,
            }
            enum EventType = EventType { Normal, Warning }
            record Event = Event { type_, reason, message }
            record Error = ReconcileError { message, retryable }
        }
    };
}

/// One line of [`wit_conversions!`]'s table at a time.
#[doc(hidden)]
#[macro_export]
macro_rules! __wit_table {
    () => {};

    (record $ours:ident = $theirs:ident { $($fields:tt)* } $($rest:tt)*) => {
        $crate::__wit_record! { plain $ours $theirs [] $($fields)* }
        $crate::__wit_table! { $($rest)* }
    };

    (json record $ours:ident = $theirs:ident { $($fields:tt)* } $($rest:tt)*) => {
        $crate::__wit_record! { json $ours $theirs [] $($fields)* }
        $crate::__wit_table! { $($rest)* }
    };

    (enum $ours:ident = $theirs:ident { $($case:ident),* $(,)? } $($rest:tt)*) => {
        impl $crate::wit::Lower<__wit::$theirs> for $crate::$ours {
            fn lower(&self) -> __wit::$theirs {
                match self {
                    $($crate::$ours::$case => __wit::$theirs::$case,)*
                }
            }
        }
        impl $crate::wit::Lift<__wit::$theirs> for $crate::$ours {
            type Error = ::std::convert::Infallible;
            fn lift(wire: &__wit::$theirs, _: &str) -> ::std::result::Result<Self, Self::Error> {
                Ok(match wire {
                    $(__wit::$theirs::$case => $crate::$ours::$case,)*
                })
            }
        }
        $crate::__wit_table! { $($rest)* }
    };

    (json variant $ours:ident = $theirs:ident { $($cases:tt)* } $($rest:tt)*) => {
        $crate::__wit_variant! { json $ours $theirs { $($cases)* } }
        $crate::__wit_table! { $($rest)* }
    };

    (variant $ours:ident = $theirs:ident { $($cases:tt)* } $($rest:tt)*) => {
        $crate::__wit_variant! { plain $ours $theirs { $($cases)* } }
        $crate::__wit_table! { $($rest)* }
    };
}

/// One variant: cases with at most one payload each, which lift fallibly (`json`) when
/// one holds JSON text.
#[doc(hidden)]
#[macro_export]
macro_rules! __wit_variant {
    ($mode:ident $ours:ident $theirs:ident { $($case:ident $(($payload:ident))?),* $(,)? }) => {
        impl $crate::wit::Lower<__wit::$theirs> for $crate::$ours {
            fn lower(&self) -> __wit::$theirs {
                match self {
                    $($crate::$ours::$case $(($payload))? =>
                        __wit::$theirs::$case $(($crate::wit::Lower::lower($payload)))?,)*
                }
            }
        }
        impl $crate::wit::Lift<__wit::$theirs> for $crate::$ours {
            type Error = $crate::__wit_error!($mode);
            fn lift(wire: &__wit::$theirs, _: &str) -> ::std::result::Result<Self, Self::Error> {
                Ok(match wire {
                    $(__wit::$theirs::$case $(($payload))? =>
                        $crate::$ours::$case $(($crate::wit::Lift::lift($payload, stringify!($payload))?))?,)*
                })
            }
        }
    };
}

/// One record: its fields normalized to `(ours theirs label)` one at a time, then its
/// conversions.
#[doc(hidden)]
#[macro_export]
macro_rules! __wit_record {
    ($mode:ident $ours:ident $theirs:ident [$(($field:ident $wire:ident $what:expr))*]) => {
        impl $crate::wit::Lower<__wit::$theirs> for $crate::$ours {
            fn lower(&self) -> __wit::$theirs {
                __wit::$theirs { $($wire: $crate::wit::Lower::lower(&self.$field),)* }
            }
        }
        impl $crate::wit::Lift<__wit::$theirs> for $crate::$ours {
            type Error = $crate::__wit_error!($mode);
            fn lift(wire: &__wit::$theirs, _: &str) -> ::std::result::Result<Self, Self::Error> {
                Ok($crate::$ours { $($field: $crate::wit::Lift::lift(&wire.$wire, $what)?,)* })
            }
        }
        impl ::std::convert::From<&$crate::$ours> for __wit::$theirs {
            fn from(value: &$crate::$ours) -> Self {
                $crate::wit::Lower::lower(value)
            }
        }
        $crate::__wit_lift_impl! { $mode $ours $theirs }
    };
    ($mode:ident $ours:ident $theirs:ident [$($done:tt)*]
        $field:ident = $wire:ident as $what:literal $(, $($rest:tt)*)?) => {
        $crate::__wit_record! { $mode $ours $theirs [$($done)* ($field $wire $what)] $($($rest)*)? }
    };
    ($mode:ident $ours:ident $theirs:ident [$($done:tt)*]
        $field:ident = $wire:ident $(, $($rest:tt)*)?) => {
        $crate::__wit_record! {
            $mode $ours $theirs [$($done)* ($field $wire stringify!($field))] $($($rest)*)?
        }
    };
    ($mode:ident $ours:ident $theirs:ident [$($done:tt)*]
        $field:ident as $what:literal $(, $($rest:tt)*)?) => {
        $crate::__wit_record! { $mode $ours $theirs [$($done)* ($field $field $what)] $($($rest)*)? }
    };
    ($mode:ident $ours:ident $theirs:ident [$($done:tt)*]
        $field:ident $(, $($rest:tt)*)?) => {
        $crate::__wit_record! {
            $mode $ours $theirs [$($done)* ($field $field stringify!($field))] $($($rest)*)?
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __wit_error {
    (plain) => {
        ::std::convert::Infallible
    };
    (json) => {
        $crate::wit::NotJson
    };
}

/// What a side receives: `From` for a record without JSON, `TryFrom` for one with.
#[doc(hidden)]
#[macro_export]
macro_rules! __wit_lift_impl {
    (plain $ours:ident $theirs:ident) => {
        impl ::std::convert::From<__wit::$theirs> for $crate::$ours {
            fn from(wire: __wit::$theirs) -> Self {
                match $crate::wit::Lift::lift(&wire, "") {
                    Ok(value) => value,
                    Err(never) => match never {},
                }
            }
        }
    };
    (json $ours:ident $theirs:ident) => {
        impl ::std::convert::TryFrom<__wit::$theirs> for $crate::$ours {
            type Error = $crate::wit::NotJson;
            fn try_from(wire: __wit::$theirs) -> ::std::result::Result<Self, Self::Error> {
                $crate::wit::Lift::lift(&wire, "")
            }
        }
    };
}
