//! Wire primitives shared by every contract type.
//!
//! The contract distinguishes an absent key from `null`, uses literal
//! `version: 1` and literal `true` flags, and constrains numbers and ids
//! more tightly than JSON does. Each such rule is one small type here; the
//! contract structs are then declared once with `wire_struct!`, which
//! derives serde, JSON Schema and the violation collector from the same
//! field list, so the parser, the validator and the schema cannot disagree.
//!
//! A value that cannot be wrong needs no fallible constructor: small
//! integers convert with `From` (`NonNegF64::from(3u32)`,
//! `SafeInt::from(-1i32)`; [`Count`] and [`EpochSeconds`] from `u64`);
//! `new` checks an arbitrary `f64`.
//!
//! ```
//! use acp_extension_core::wire::{NonNegF64, Version1};
//!
//! let v: Version1 = serde_json::from_str("1")?;
//! assert_eq!(serde_json::to_string(&v)?, "1");
//! assert!(serde_json::from_str::<Version1>("2").is_err());
//! assert!(serde_json::from_str::<NonNegF64>("-1").is_err());
//! # Ok::<_, serde_json::Error>(())
//! ```

pub(crate) mod bounded;
mod macros;
#[doc(hidden)]
pub mod sift;
mod tagged;
#[doc(hidden)]
pub use tagged::{Replay, finish_variant, read_until_tag};

use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "schema")]
use schemars::{Schema, json_schema};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::violation::{Check, Rule, Violation, child};

pub use agent_client_protocol::schema::{IntoMaybeUndefined, IntoOption, MaybeUndefined};

/// A JSON object: the type of `_meta` and of preserved unknown keys.
pub type Map = serde_json::Map<String, Value>;

/// One key of a [`WireObject::merge_into`]: `null`
/// removes the key (the others keep their order, as JavaScript's `delete`
/// leaves them), another value replaces its value or is added last. A
/// value that does not serialize (no contract type's fails to) leaves its
/// key as it was.
#[doc(hidden)]
pub fn merge_entry(map: &mut Map, key: &str, value: serde_json::Result<Value>) {
    match value {
        Ok(Value::Null) => {
            map.shift_remove(key);
        }
        Ok(value) => match map.get_mut(key) {
            Some(slot) => *slot = value,
            None => {
                map.insert(key.to_owned(), value);
            }
        },
        Err(_) => {}
    }
}

/// An object of the contract: the keys it defines, the keys it does not
/// (kept as they came), and how it applies to a JSON map as a patch. Every
/// contract struct implements it.
///
/// ```
/// use acp_extension_core::subagent_events::SubagentProgress;
/// use acp_extension_core::wire::{Map, WireObject};
/// use serde_json::json;
///
/// assert!(SubagentProgress::KEYS.contains(&"summary"));
/// let old = json!({"summary": "old", "lastToolName": "grep", "contextTokens": 5});
/// let mut map: Map = old.as_object().cloned().unwrap_or_default();
/// // `summary` replaced, `lastToolName` removed by its `null`, `contextTokens` kept.
/// SubagentProgress::new().summary("new").last_tool_name(None::<String>).merge_into(&mut map);
/// assert_eq!(serde_json::Value::Object(map), json!({"summary": "new", "contextTokens": 5}));
///
/// // A key the contract does not define is kept, and written back.
/// let p: SubagentProgress = serde_json::from_value(json!({"phase": "plan"}))?;
/// assert_eq!(p.extra()["phase"], "plan");
/// assert_eq!(serde_json::to_value(&p)?, json!({"phase": "plan"}));
/// # Ok::<_, serde_json::Error>(())
/// ```
pub trait WireObject: Serialize {
    /// Keys of this object that the contract defines.
    const KEYS: &'static [&'static str];

    /// The keys this version of the contract does not define, as they
    /// came: kept so that a relay never drops another peer's fields, and
    /// written after the object's own keys.
    fn extra(&self) -> &Map;

    /// The keys this version of the contract does not define, to change
    /// (a key of [`KEYS`](Self::KEYS) put here is not written).
    fn extra_mut(&mut self) -> &mut Map;

    /// Applies this object to `map` as a one-level JSON Merge Patch (RFC
    /// 7396, not recursing): each key it writes replaces that key's value,
    /// in the order it writes them (a new key goes last), and an explicit
    /// `null` removes the key (the others keep their order); a key it
    /// leaves absent keeps its value. This is how a run's progress folds.
    fn merge_into(&self, map: &mut Map) {
        if let Ok(Value::Object(patch)) = serde_json::to_value(self) {
            for (key, value) in patch {
                merge_entry(map, &key, Ok(value));
            }
        }
    }
}

/// A closed set of strings of the contract: every enum of wire spellings
/// implements it.
///
/// ```
/// use acp_extension_core::subagent_events::SubagentState;
/// use acp_extension_core::wire::WireEnum;
///
/// assert_eq!(SubagentState::from_wire("running"), Some(SubagentState::Running));
/// assert_eq!(SubagentState::Running.as_str(), "running");
/// assert!(SubagentState::ALL.contains(&"completed"));
/// ```
pub trait WireEnum: Sized + Copy + 'static {
    /// Every wire spelling, in contract order.
    const ALL: &'static [&'static str];

    /// The wire spelling.
    fn as_str(self) -> &'static str;

    /// Parses a wire spelling; `None` for any other string.
    fn from_wire(s: &str) -> Option<Self>;
}

/// Largest integer a JavaScript number holds exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Serializes a finite `f64`, writing integral values without a fraction
/// (`100`, not `100.0`) as JavaScript does.
pub(crate) fn serialize_js_number<S: Serializer>(n: f64, s: S) -> Result<S::Ok, S::Error> {
    // JavaScript prints every integral number below 1e21 without a fraction;
    // those that fit 64 bits are written as integers here too.
    if n.fract() == 0.0 && n.abs() < 9.0e18 {
        if n < 0.0 {
            s.serialize_i64(n as i64)
        } else {
            // `-0.0` also lands here and is written as `0`, like JSON.stringify.
            s.serialize_u64(n as u64)
        }
    } else {
        s.serialize_f64(n)
    }
}

pub use crate::violation::json_type;

/// The JSON Schema of a wire primitive, written inline where it is used
/// (a primitive has no definition of its own).
macro_rules! inline_schema {
    ($name:ident, $schema:tt) => {
        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!($schema)
            }
        }
    };
}
pub(crate) use inline_schema;

macro_rules! number_wrapper {
    (
        $(#[$doc:meta])*
        $name:ident, $expected:literal, $rule:expr, |$n:ident| $ok:expr, $schema:tt
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
        pub struct $name(f64);

        impl $name {
            /// Wraps `n`, or returns the rule it breaks.
            pub fn new(n: f64) -> Result<Self, Rule> {
                let $n = n;
                if $ok { Ok(Self(n)) } else { Err($rule) }
            }

            /// The number.
            pub fn get(self) -> f64 {
                self.0
            }
        }

        impl TryFrom<f64> for $name {
            type Error = Rule;
            fn try_from(n: f64) -> Result<Self, Rule> {
                Self::new(n)
            }
        }

        impl From<$name> for f64 {
            fn from(v: $name) -> f64 {
                v.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serialize_js_number(self.0, s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let n = f64::deserialize(d)?;
                Self::new(n).map_err(de::Error::custom)
            }
        }

        impl Check for $name {
            const EXPECTED: &'static str = $expected;
            fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
                match v.as_f64() {
                    Some(n) => {
                        if let Err(rule) = Self::new(n) {
                            out.push(Violation::new(at, rule));
                        }
                    }
                    None => out.push(Violation::new(at, Rule::type_of($expected, v))),
                }
            }
        }

        inline_schema!($name, $schema);
    };
}

number_wrapper!(
    /// A finite number `>= 0`; fractions allowed (`1.5` epoch seconds pass).
    NonNegF64, "a finite number >= 0", Rule::FiniteNonNegative,
    |n| n.is_finite() && n >= 0.0,
    { "type": "number", "minimum": 0 }
);

number_wrapper!(
    /// A finite number of any sign.
    FiniteF64, "a finite number", Rule::Finite,
    |n| n.is_finite(),
    { "type": "number" }
);

number_wrapper!(
    /// An integral number with |n| <= 2^53 − 1 (a JavaScript safe integer).
    SafeInt, "a safe integer", Rule::SafeInteger,
    |n| n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER,
    { "type": "integer", "minimum": -9_007_199_254_740_991_i64, "maximum": 9_007_199_254_740_991_i64 }
);

number_wrapper!(
    /// A safe integer `>= 0` (for example a line number).
    SafeUint, "a non-negative safe integer", Rule::NonNegativeSafeInteger,
    |n| n.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&n),
    { "type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991_i64 }
);

/// Infallible constructors: an integer of these types is always a valid
/// value of the wrapper (exact in an `f64`, finite, in range), so literal
/// numbers need no `new(…).unwrap()`.
///
/// ```
/// use acp_extension_core::wire::{FiniteF64, NonNegF64, SafeInt, SafeUint};
///
/// assert_eq!(NonNegF64::from(3u32).get(), 3.0);
/// assert_eq!(FiniteF64::from(-2i32).get(), -2.0);
/// assert_eq!(SafeInt::from(-7i32).get(), -7.0);
/// assert_eq!(SafeUint::from(42u32).get(), 42.0);
/// ```
macro_rules! from_exact_integers {
    ($($name:ident: $($int:ty),+;)*) => {
        $($(
            impl From<$int> for $name {
                fn from(n: $int) -> Self {
                    Self(f64::from(n))
                }
            }
        )+)*
    };
}

from_exact_integers! {
    NonNegF64: u8, u16, u32;
    FiniteF64: u8, u16, u32, i8, i16, i32;
    SafeInt: u8, u16, u32, i8, i16, i32;
    SafeUint: u8, u16, u32;
}

/// Constants: `const` constructors whose value is checked when the
/// constant is built, so a literal such as a price needs no
/// `new(…).expect(…)` at run time. In a `const` item (or a `const { }`
/// block) a value out of range is a compile error; called at run time
/// with one, they panic, so take [`NonNegF64::new`] for values that come
/// from elsewhere.
///
/// ```
/// use acp_extension_core::wire::{FiniteF64, NonNegF64, Percent};
///
/// const PRICE_PER_TOKEN: NonNegF64 = NonNegF64::constant(0.001);
/// const HALF: Percent = Percent::constant(50.0);
/// assert_eq!(PRICE_PER_TOKEN.get(), 0.001);
/// assert_eq!(HALF.get(), 50.0);
/// assert_eq!(const { FiniteF64::constant(-1.5) }.get(), -1.5);
/// ```
///
/// ```compile_fail
/// use acp_extension_core::wire::NonNegF64;
/// const NEGATIVE: NonNegF64 = NonNegF64::constant(-1.0); // does not compile
/// ```
macro_rules! const_constructor {
    ($($name:ident: |$n:ident| $ok:expr, $what:literal;)*) => {
        $(
            impl $name {
                #[doc = concat!(
                    "`", stringify!($name), "` from a constant, checked when the constant is built: ",
                    "in a `const` item (or a `const { }` block) a value that is not ", $what,
                    " is a compile error. Called at run time with one, it panics; take `new` for ",
                    "values that come from elsewhere.\n\n```\nuse acp_extension_core::wire::",
                    stringify!($name), ";\n\nconst PRICE: ", stringify!($name), " = ",
                    stringify!($name), "::constant(0.25);\nassert_eq!(PRICE.get(), 0.25);\n```"
                )]
                pub const fn constant($n: f64) -> Self {
                    if $ok {
                        Self($n)
                    } else {
                        panic!(concat!("not ", $what))
                    }
                }
            }
        )*
    };
}

const_constructor! {
    NonNegF64: |n| n.is_finite() && n >= 0.0, "a finite number >= 0";
    FiniteF64: |n| n.is_finite(), "a finite number";
    Percent: |n| n.is_finite() && n >= 0.0 && n <= 100.0, "a percentage within 0..100";
}

number_wrapper!(
    /// A percentage: a finite number within 0..100, inclusive (a rate-limit
    /// window's `usedPercent`).
    Percent, "a percentage within 0..100", Rule::Percent,
    |n| n.is_finite() && (0.0..=100.0).contains(&n),
    { "type": "number", "minimum": 0, "maximum": 100 }
);

number_wrapper!(
    /// A point in time as Unix epoch seconds (every `…AtEpochSeconds`
    /// field): a finite number `>= 0`.
    ///
    /// The contract accepts fractions, but consumers read whole seconds
    /// (the Lody host rejects a fractional or zero `resetsAtEpochSeconds`),
    /// so everything this crate writes is whole: [`EpochSeconds::now`],
    /// `From<SystemTime>` and [`EpochSeconds::from_secs`] truncate to the
    /// second. A linter warns on fractions, on zero and on values
    /// that look like milliseconds.
    ///
    /// ```
    /// use acp_extension_core::wire::EpochSeconds;
    /// use std::time::{Duration, SystemTime};
    ///
    /// let t = EpochSeconds::from(SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_900));
    /// assert_eq!(t.get(), 1_700_000_000.0);
    /// assert_eq!(serde_json::to_string(&t)?, "1700000000");
    /// assert!(EpochSeconds::now().get().fract() == 0.0);
    /// assert!(EpochSeconds::new(-1.0).is_err());
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    EpochSeconds, "a finite number >= 0", Rule::FiniteNonNegative,
    |n| n.is_finite() && n >= 0.0,
    { "type": "number", "minimum": 0 }
);

impl EpochSeconds {
    /// The current time, in whole seconds.
    pub fn now() -> Self {
        Self::from(std::time::SystemTime::now())
    }

    /// `secs` whole seconds after the epoch.
    pub fn from_secs(secs: u64) -> Self {
        Self(secs as f64)
    }
}

impl From<std::time::SystemTime> for EpochSeconds {
    /// Whole seconds since the epoch (a time before it gives 0).
    fn from(t: std::time::SystemTime) -> Self {
        let secs = t
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self::from_secs(secs)
    }
}

impl From<u64> for EpochSeconds {
    fn from(secs: u64) -> Self {
        Self::from_secs(secs)
    }
}

impl From<u32> for EpochSeconds {
    fn from(secs: u32) -> Self {
        Self::from_secs(u64::from(secs))
    }
}

impl IntoOption<EpochSeconds> for std::time::SystemTime {
    fn into_option(self) -> Option<EpochSeconds> {
        Some(EpochSeconds::from(self))
    }
}

impl IntoOption<EpochSeconds> for u64 {
    fn into_option(self) -> Option<EpochSeconds> {
        Some(EpochSeconds::from_secs(self))
    }
}

/// Declares a unit type that (de)serializes as one literal JSON value.
macro_rules! literal {
    ($(#[$doc:meta])* $name:ident = $lit:literal, $check:expr, $schema:tt) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;

        impl $name {
            fn accepts(v: &Value) -> bool {
                let f: fn(&Value) -> bool = $check;
                f(v)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                Value::from($lit).serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = Value::deserialize(d)?;
                if Self::accepts(&v) {
                    Ok($name)
                } else {
                    Err(de::Error::custom(Rule::Literal(stringify!($lit))))
                }
            }
        }

        impl Check for $name {
            const EXPECTED: &'static str = concat!("the literal ", stringify!($lit));
            fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
                if !Self::accepts(v) {
                    out.push(Violation::new(at, Rule::Literal(stringify!($lit))));
                }
            }
        }

        inline_schema!($name, $schema);
    };
}

literal!(
    /// The literal number `1` of every versioned payload. `1.0` passes (it is
    /// the same JavaScript number); `2`, `"1"` and `null` do not.
    Version1 = 1,
    |v| v.as_f64() == Some(1.0),
    { "const": 1 }
);

literal!(
    /// A flag that is either absent or the literal `true`; `false` is invalid.
    True = true,
    |v| v.as_bool() == Some(true),
    { "const": true }
);

/// A string that must not be empty (run ids, session ids of events, tool call ids).
///
/// # Example
///
/// ```
/// use acp_extension_core::wire::NonEmptyString;
///
/// let id = NonEmptyString::new("run-1")?;
/// assert_eq!(id.as_str(), "run-1");
/// assert!(serde_json::from_str::<NonEmptyString>("\"\"").is_err());
/// # Ok::<_, acp_extension_core::violation::Rule>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct NonEmptyString(String);

impl NonEmptyString {
    /// Wraps `s`, or returns [`Rule::NonEmpty`] for `""`.
    pub fn new(s: impl Into<String>) -> Result<Self, Rule> {
        let s = s.into();
        if s.is_empty() {
            Err(Rule::NonEmpty)
        } else {
            Ok(Self(s))
        }
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for NonEmptyString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for NonEmptyString {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for NonEmptyString {
    type Error = Rule;
    fn try_from(s: String) -> Result<Self, Rule> {
        Self::new(s)
    }
}

impl TryFrom<&str> for NonEmptyString {
    type Error = Rule;
    fn try_from(s: &str) -> Result<Self, Rule> {
        Self::new(s)
    }
}

impl<'de> Deserialize<'de> for NonEmptyString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::new(s).map_err(de::Error::custom)
    }
}

impl Check for NonEmptyString {
    const EXPECTED: &'static str = "a non-empty string";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        match v.as_str() {
            Some("") => out.push(Violation::new(at, Rule::NonEmpty)),
            Some(_) => {}
            None => out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v))),
        }
    }
}

inline_schema!(NonEmptyString, { "type": "string", "minLength": 1 });

/// Map keys that borrow from the input when they can (no allocation for
/// the common unescaped key).
pub(crate) struct Key<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Schema of an object property that may be `null`.
#[cfg(feature = "schema")]
pub(crate) fn nullable_schema(inner: Schema) -> Schema {
    json_schema!({ "anyOf": [inner, { "type": "null" }] })
}

/// Checks an optional-but-never-null key of an object.
pub(crate) fn check_opt<T: Check>(obj: &Map, key: &str, at: &str, out: &mut Vec<Violation>) {
    match obj.get(key) {
        None => {}
        Some(Value::Null) => out.push(Violation::new(
            child(at, key),
            Rule::NotNull {
                expected: T::EXPECTED,
            },
        )),
        Some(v) => T::check(v, &child(at, key), out),
    }
}

/// Checks a key that may be absent or `null`.
pub(crate) fn check_nullable<T: Check>(obj: &Map, key: &str, at: &str, out: &mut Vec<Violation>) {
    match obj.get(key) {
        None | Some(Value::Null) => {}
        Some(v) => T::check(v, &child(at, key), out),
    }
}

/// Checks a key that must be present (its type decides whether `null` passes).
pub(crate) fn check_req<T: Check>(obj: &Map, key: &str, at: &str, out: &mut Vec<Violation>) {
    match obj.get(key) {
        None => out.push(Violation::new(
            child(at, key),
            Rule::Required {
                expected: T::EXPECTED,
            },
        )),
        Some(v) => T::check(v, &child(at, key), out),
    }
}

/// A count: a non-negative integer (tokens, requests, background tasks).
///
/// Built infallibly from `u32` and `u64`; from a JSON number with
/// [`Count::from_f64`].
///
/// JSON `1.0` is accepted as 1, since JavaScript cannot tell it from `1`;
/// negative, fractional, too large (≥ 2^64) and `null` counters are
/// rejected with [`Rule::NonNegativeInteger`] (or a type rule). The
/// reference accepts those only by accident. Written as a JSON integer.
///
/// # Example
///
/// ```
/// use acp_extension_core::wire::Count;
///
/// assert_eq!(Count::from(3u32).get(), 3);
/// assert_eq!(Count::from_f64(2.0)?, Count::new(2)); // JSON `2.0`
/// assert!(Count::from_f64(2.5).is_err());
/// assert_eq!(serde_json::to_string(&Count::new(7)).unwrap(), "7");
/// # Ok::<_, acp_extension_core::violation::Rule>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Count(u64);

impl Count {
    /// Zero.
    pub const ZERO: Count = Count(0);

    /// Wraps `n`.
    pub const fn new(n: u64) -> Self {
        Self(n)
    }

    /// The count.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Converts a JSON number read as a float: integral, `>= 0` and below
    /// 2^64, else [`Rule::NonNegativeInteger`].
    pub fn from_f64(n: f64) -> Result<Self, Rule> {
        // 2^64 as f64 is exact; every integral f64 below it fits in a u64.
        const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
        if n.fract() == 0.0 && (0.0..TWO_POW_64).contains(&n) {
            Ok(Self(n as u64))
        } else {
            Err(Rule::NonNegativeInteger)
        }
    }
}

impl From<u64> for Count {
    fn from(n: u64) -> Self {
        Self(n)
    }
}

impl From<u32> for Count {
    fn from(n: u32) -> Self {
        Self(u64::from(n))
    }
}

impl From<usize> for Count {
    fn from(n: usize) -> Self {
        Self(n as u64)
    }
}

impl IntoOption<Count> for u64 {
    fn into_option(self) -> Option<Count> {
        Some(Count(self))
    }
}

impl IntoOption<Count> for u32 {
    fn into_option(self) -> Option<Count> {
        Some(Count::from(self))
    }
}

impl From<Count> for u64 {
    fn from(n: Count) -> u64 {
        n.0
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Count {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl Visitor<'_> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(<Count as Check>::EXPECTED)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                u64::try_from(v)
                    .map(Count)
                    .map_err(|_| E::custom(Rule::NonNegativeInteger))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                Count::from_f64(v).map_err(E::custom)
            }
        }
        d.deserialize_u64(CountVisitor)
    }
}

impl Check for Count {
    const EXPECTED: &'static str = "a non-negative integer";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        match v {
            Value::Number(n) if n.is_u64() => {}
            Value::Number(n)
                if n.is_f64() && n.as_f64().is_some_and(|f| Count::from_f64(f).is_ok()) => {}
            Value::Number(_) => out.push(Violation::new(at, Rule::NonNegativeInteger)),
            _ => out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v))),
        }
    }
}

inline_schema!(Count, { "type": "integer", "minimum": 0 });
