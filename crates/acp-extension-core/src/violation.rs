//! The violation vocabulary, the crate's ground floor: a [`Violation`] is a
//! broken [`Rule`] at a JSON pointer, and [`Check`] is the collector every
//! contract type implements (through `wire_struct!` and its siblings) to
//! report all of them. Nothing here knows a contract type.

use std::fmt;

use indexmap::IndexMap;
use serde_json::Value;

/// The JSON type name of a value (`a string`, `an object`, `null`…), as
/// validation messages word it.
///
/// ```
/// use acp_extension_core::wire::json_type;
///
/// assert_eq!(json_type(&serde_json::json!([1])), "an array");
/// ```
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One broken rule at an RFC 6901 JSON pointer such as `/snapshot/summary`.
///
/// ```
/// use acp_extension_core::session::SessionActivityUpdate;
/// use acp_extension_core::violation::check;
///
/// let v = serde_json::json!({"version": 1, "sessionId": "s", "state": "busy", "backgroundTaskCount": -1});
/// let found: Vec<(String, &str)> = check::<SessionActivityUpdate>(&v)
///     .iter()
///     .map(|x| (x.pointer.clone(), x.rule.id()))
///     .collect();
/// assert_eq!(found, [("/state".to_owned(), "one-of"), ("/backgroundTaskCount".to_owned(), "non-negative-integer")]);
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {rule}", if pointer.is_empty() { "(root)" } else { pointer.as_str() })]
#[non_exhaustive]
pub struct Violation {
    /// Where, as a JSON pointer (`""` is the whole value).
    pub pointer: String,
    /// What rule the value there breaks.
    pub rule: Rule,
}

impl Violation {
    /// A violation of `rule` at `pointer`.
    pub fn new(pointer: impl Into<String>, rule: Rule) -> Self {
        Self {
            pointer: pointer.into(),
            rule,
        }
    }

    /// The sentence a person reads, such as
    /// `must be a string when present; null is not allowed`.
    pub fn message(&self) -> String {
        self.rule.to_string()
    }
}

/// The contract rules a value can break. [`Rule::id`] is a stable
/// kebab-case identifier for machines; `Display` is the sentence for people.
///
/// # Example
///
/// ```
/// use acp_extension_core::wire::{Count, NonEmptyString};
///
/// let rule = NonEmptyString::new("").unwrap_err();
/// assert_eq!(rule.id(), "non-empty");
/// assert_eq!(Count::from_f64(-1.0).unwrap_err().id(), "non-negative-integer");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Rule {
    /// A required key is missing.
    #[error("is required ({expected})")]
    Required {
        /// What the key must hold.
        expected: &'static str,
    },
    /// An optional key is present with `null`, which the contract forbids.
    #[error("must be {expected} when present; null is not allowed")]
    NotNull {
        /// What the key must hold when present.
        expected: &'static str,
    },
    /// The value has the wrong JSON type.
    #[error("must be {expected}, found {found}")]
    Type {
        /// What the value must be.
        expected: &'static str,
        /// What it is.
        found: &'static str,
    },
    /// The value is not one of the allowed strings.
    #[error("must be one of {}", quote_list(.0))]
    OneOf(&'static [&'static str]),
    /// The value is not the required literal.
    #[error("must be the literal {0}")]
    Literal(&'static str),
    /// An empty string where the contract needs a non-empty one.
    #[error("must be a non-empty string")]
    NonEmpty,
    /// Not a finite number `>= 0`.
    #[error("must be a finite number >= 0")]
    FiniteNonNegative,
    /// Not a finite number.
    #[error("must be a finite number")]
    Finite,
    /// Not an integer within ±(2^53 − 1).
    #[error("must be an integer within ±(2^53 − 1)")]
    SafeInteger,
    /// Not a non-negative integer within 2^53 − 1.
    #[error("must be a non-negative integer within 2^53 − 1")]
    NonNegativeSafeInteger,
    /// Not a non-negative integer (token counters).
    #[error("must be a non-negative integer")]
    NonNegativeInteger,
    /// A string longer than allowed.
    #[error("must be at most {0} characters")]
    MaxLength(usize),
    /// A number outside the inclusive percentage range.
    #[error("must be a percentage within 0..100")]
    Percent,
    /// The bytes are not one JSON value.
    #[error("is not valid JSON: {0}")]
    Syntax(String),
    /// A rule that relates several fields (elicitation notes, resource
    /// contents, …), with its own id.
    #[error("{message}")]
    Relation {
        /// Stable kebab-case id of the rule.
        id: &'static str,
        /// The sentence for people.
        message: String,
    },
}

/// The items quoted and separated by commas, written straight into the
/// message (a record is made for every violation a stream holds).
fn quote_list<'a>(items: &'a [&'a str]) -> impl fmt::Display + 'a {
    struct Quoted<'a>(&'a [&'a str]);
    impl fmt::Display for Quoted<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            for (i, item) in self.0.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "\"{item}\"")?;
            }
            Ok(())
        }
    }
    Quoted(items)
}

impl Rule {
    /// [`Rule::Type`] for `found`.
    pub fn type_of(expected: &'static str, found: &Value) -> Self {
        Rule::Type {
            expected,
            found: json_type(found),
        }
    }

    /// A stable kebab-case id for machines (`--json` output, rule tables).
    pub fn id(&self) -> &'static str {
        match self {
            Rule::Required { .. } => "required",
            Rule::NotNull { .. } => "not-null",
            Rule::Type { .. } => "type",
            Rule::OneOf(_) => "one-of",
            Rule::Literal(_) => "literal",
            Rule::NonEmpty => "non-empty",
            Rule::FiniteNonNegative => "finite-non-negative",
            Rule::Finite => "finite",
            Rule::SafeInteger => "safe-integer",
            Rule::NonNegativeSafeInteger => "non-negative-safe-integer",
            Rule::NonNegativeInteger => "non-negative-integer",
            Rule::MaxLength(_) => "max-length",
            Rule::Percent => "percent",
            Rule::Syntax(_) => "syntax",
            Rule::Relation { id, .. } => id,
        }
    }
}

/// Appends `key` to a JSON pointer, escaping `~` and `/` (RFC 6901).
pub(crate) fn push_child(path: &mut String, key: &str) {
    path.push('/');
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// The JSON pointer of `key` inside the value at `at` (escaped as RFC 6901
/// says).
pub fn child(at: &str, key: &str) -> String {
    let mut s = String::with_capacity(at.len() + key.len() + 1);
    s.push_str(at);
    push_child(&mut s, key);
    s
}

/// Collects every violation of a contract type in a JSON value.
///
/// Implemented by each contract type alongside its `Deserialize`, from the
/// same declaration, so that `T::deserialize(v).is_ok()` exactly when
/// `check` finds nothing. Parsing stops at the first error; `check` goes on
/// and reports them all, each at its JSON pointer.
pub trait Check {
    /// What a value of this type is, for messages (`"a string"`).
    const EXPECTED: &'static str;

    /// Pushes every violation found in `v` (located at pointer `at`).
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>);
}

/// Every violation of `T` in `v`, with pointers relative to `v`.
pub fn check<T: Check>(v: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    T::check(v, "", &mut out);
    out
}

impl Check for String {
    const EXPECTED: &'static str = "a string";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        if !v.is_string() {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
        }
    }
}

impl Check for bool {
    const EXPECTED: &'static str = "a boolean";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        if !v.is_boolean() {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
        }
    }
}

impl Check for u64 {
    const EXPECTED: &'static str = "a non-negative integer";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        match v {
            Value::Number(n) if n.is_u64() => {}
            Value::Number(_) => out.push(Violation::new(at, Rule::NonNegativeInteger)),
            _ => out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v))),
        }
    }
}

impl Check for f64 {
    const EXPECTED: &'static str = "a number";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        if !v.is_number() {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
        }
    }
}

impl Check for Value {
    const EXPECTED: &'static str = "any JSON value";
    fn check(_: &Value, _: &str, _: &mut Vec<Violation>) {}
}

impl Check for serde_json::Map<String, Value> {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        if !v.is_object() {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
        }
    }
}

impl<T: Check> Check for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        if !v.is_null() {
            T::check(v, at, out);
        }
    }
}

impl<T: Check> Check for Vec<T> {
    const EXPECTED: &'static str = "an array";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        match v.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    T::check(item, &format!("{at}/{i}"), out);
                }
            }
            None => out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v))),
        }
    }
}

impl<T: Check> Check for IndexMap<String, T> {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        match v.as_object() {
            Some(obj) => {
                for (k, item) in obj {
                    T::check(item, &child(at, k), out);
                }
            }
            None => out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v))),
        }
    }
}
