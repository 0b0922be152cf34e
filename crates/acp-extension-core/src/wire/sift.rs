//! Verdict-only parsing: walks a JSON text the way the typed parse would,
//! building nothing.
//!
//! [`Sift`] is implemented by `wire_struct!`, `wire_enum!` and `wire_union!`
//! from the same declarations as the typed parse, and by hand for the few
//! hand-written contract types. It reads strings without copying them,
//! checks numbers and literals exactly as the typed parse does, and walks
//! unknown keys without building a JSON tree (yet with the same syntax,
//! string and number checks as `serde_json::Value`).
//!
//! Its verdict, when it gives one, is the typed parse's, except that a
//! number is never a union tag (see [`TagSeed`]). It gives none
//! ([`verdict`] returns `None`, and validation goes the old way: typed
//! parse, then the JSON tree) where the two full paths can differ or the
//! typed parse buffers:
//! - a key of a contract object seen twice (the typed parse checks every
//!   copy, the JSON tree only the last, as `JSON.parse` keeps it);
//! - a union whose tag is not its first key, an event whose payload comes
//!   before its `type`;
//! - a field whose type has no sift, and a cross-field rule.
//!
//! Inside a `wire_union!` body the typed parse reads from serde's buffered
//! content, where values arrive in another form (and a nested union's tag
//! could be a variant index, which the sift refuses as `Check` does); the
//! sift's context ([`Sifting`]) carries that down, and where a sift gave up.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// What a sift hands down to the sifts it runs: whether the typed parse
/// would read the value from serde's buffered content, and where a sift
/// that gives up says so (serde's errors carry no such mark).
#[derive(Debug, Clone, Copy)]
pub struct Sifting<'c> {
    /// The typed parse would read this value from serde's buffered
    /// content (inside a `wire_union!` body).
    pub buffered: bool,
    gave_up: &'c Cell<bool>,
}

impl Sifting<'_> {
    /// The same sift, for a value the typed parse reads from serde's
    /// buffered content.
    pub fn in_buffer(self) -> Self {
        Self {
            buffered: true,
            ..self
        }
    }

    /// The error a sift returns when only the typed parse can decide;
    /// [`sifting`] tells its caller.
    pub fn fallback<E: de::Error>(self) -> E {
        self.gave_up.set(true);
        E::custom("the typed parse decides")
    }
}

/// Runs `sift` from the top of a value and tells whether it gave up
/// ([`Sifting::fallback`]): then only the typed parse can decide.
pub(crate) fn sifting<T>(sift: impl FnOnce(Sifting<'_>) -> T) -> (T, bool) {
    let gave_up = Cell::new(false);
    let result = sift(Sifting {
        buffered: false,
        gave_up: &gave_up,
    });
    (result, gave_up.get())
}

/// Checks a value the way its typed parse does, without building it.
pub trait Sift {
    /// Reads one value from `d`; `Ok` exactly when the typed parse would
    /// succeed.
    fn sift<'de, D: Deserializer<'de>>(d: D, cx: Sifting<'_>) -> Result<(), D::Error>;
}

/// An object whose keys can be checked from a map being read (what
/// `wire_struct!` declares), for unions that read their tag first.
pub trait SiftFields {
    /// Checks the remaining entries of `map`. A second `tag` key (or any
    /// key seen twice) gives up.
    fn sift_fields<'de, A: MapAccess<'de>>(
        map: A,
        cx: Sifting<'_>,
        tag: Option<&'static str>,
    ) -> Result<(), A::Error>;
}

/// The verdict of the sift on `text` (one `T` followed by whitespace):
/// `Some(valid)`, or `None` where only the typed parse and the JSON tree
/// can decide (see the module docs).
pub fn verdict<T: Sift>(text: &str) -> Option<bool> {
    let (read, gave_up) = sifting(|cx| {
        let mut de = serde_json::Deserializer::from_str(text);
        T::sift(&mut de, cx).and_then(|()| de.end())
    });
    match read {
        Ok(()) => Some(true),
        Err(_) if gave_up => None,
        // A broken rule stops the sift, and a later copy of the same key
        // would win in the JSON tree: final only without duplicate keys.
        Err(e) if e.is_data() => match has_duplicate_keys(text) {
            Ok(true) => None,
            Ok(false) | Err(_) => Some(false),
        },
        Err(_) => Some(false),
    }
}

/// Whether some object of `text` has a key twice (compared unescaped).
fn has_duplicate_keys(text: &str) -> Result<bool, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_any(DupVisitor)
}

/// Walks any value; `true` when some object in it repeats a key.
struct DupVisitor;

impl<'de> DeserializeSeed<'de> for DupVisitor {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

/// A map key, borrowed when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = std::borrow::Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        <crate::wire::Key<'de> as de::Deserialize>::deserialize(d).map(|k| k.0)
    }
}

impl<'de> Visitor<'de> for DupVisitor {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    // Reads to the end even after a duplicate: the deserializer checks
    // that each array and object is closed.
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(dup) = seq.next_element_seed(DupVisitor)? {
            found |= dup;
        }
        Ok(found)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut keys: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        let mut many: std::collections::HashSet<std::borrow::Cow<'de, str>> = Default::default();
        let mut found = false;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let dup = if keys.len() < 16 {
                let dup = keys.contains(&key);
                keys.push(key);
                dup
            } else {
                if many.is_empty() {
                    many.extend(keys.iter().cloned());
                }
                !many.insert(key)
            };
            found |= dup;
            found |= map.next_value_seed(DupVisitor)?;
        }
        Ok(found)
    }
}

/// Chooses, for a concrete type, its sift or else its typed parse (by
/// autoref: `(&&Probe::<T>::new()).seed(cx)`), so a contract type
/// without a sift still works as a field.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// A probe for `T`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

/// Picked for types with a [`Sift`].
pub trait ViaSift {
    /// The seed that reads one value.
    type Seed<'c>;
    /// The seed that reads one value.
    fn seed<'c>(&self, cx: Sifting<'c>) -> Self::Seed<'c>;
    /// The whole-text verdict.
    fn verdict_fn(&self) -> fn(&str) -> Option<bool>;
}

impl<T: Sift> ViaSift for &Probe<T> {
    type Seed<'c> = SiftSeed<'c, T>;
    fn seed<'c>(&self, cx: Sifting<'c>) -> SiftSeed<'c, T> {
        SiftSeed(cx, PhantomData)
    }
    fn verdict_fn(&self) -> fn(&str) -> Option<bool> {
        verdict::<T>
    }
}

/// Picked for types without a [`Sift`]: their typed parse.
pub trait ViaParse {
    /// The seed that reads one value.
    type Seed<'c>;
    /// The seed that reads one value.
    fn seed<'c>(&self, cx: Sifting<'c>) -> Self::Seed<'c>;
    /// The whole-text verdict: none.
    fn verdict_fn(&self) -> fn(&str) -> Option<bool>;
}

impl<T: DeserializeOwned> ViaParse for Probe<T> {
    type Seed<'c> = ParseSeed<'c, T>;
    fn seed<'c>(&self, cx: Sifting<'c>) -> ParseSeed<'c, T> {
        ParseSeed(cx, PhantomData)
    }
    fn verdict_fn(&self) -> fn(&str) -> Option<bool> {
        |_| None
    }
}

/// Sifts one `T`.
pub struct SiftSeed<'c, T>(Sifting<'c>, PhantomData<fn() -> T>);

impl<'c, T> SiftSeed<'c, T> {
    /// A seed for one `T`, in the sift `cx`.
    pub fn new(cx: Sifting<'c>) -> Self {
        Self(cx, PhantomData)
    }
}

impl<'de, T: Sift> DeserializeSeed<'de> for SiftSeed<'_, T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        T::sift(d, self.0)
    }
}

/// Gives up on a type without a sift: its duplicate keys are out of
/// sight (see the module docs).
pub struct ParseSeed<'c, T>(Sifting<'c>, PhantomData<fn() -> T>);

impl<'de, T> DeserializeSeed<'de> for ParseSeed<'_, T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
        Err(self.0.fallback())
    }
}

/// Reads a map with [`SiftFields`].
pub struct FieldsVisitor<'c, T>(pub Sifting<'c>, pub PhantomData<fn() -> T>);

impl<'de, T: SiftFields> Visitor<'de> for FieldsVisitor<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        T::sift_fields(map, self.0, None)
    }
}

/// Implements [`Sift`] as the typed parse (types whose parse allocates
/// nothing on valid input).
macro_rules! sift_by_parse {
    ($($ty:ty),* $(,)?) => {
        $(
            impl Sift for $ty {
                fn sift<'de, D: Deserializer<'de>>(d: D, _: Sifting<'_>) -> Result<(), D::Error> {
                    <$ty as de::Deserialize>::deserialize(d).map(drop)
                }
            }
        )*
    };
}
sift_by_parse!(
    bool,
    f64,
    u64,
    crate::wire::NonNegF64,
    crate::wire::EpochSeconds,
    crate::wire::Percent,
    crate::wire::Count,
    crate::wire::FiniteF64,
    crate::wire::SafeInt,
    crate::wire::SafeUint,
    crate::wire::Version1,
    crate::wire::True,
);

/// Accepts any string, as `String`'s parse does, without copying it.
struct StrVisitor {
    non_empty: bool,
}

impl StrVisitor {
    fn check<E: de::Error>(&self, s: &str) -> Result<(), E> {
        if self.non_empty && s.is_empty() {
            Err(E::custom(crate::violation::Rule::NonEmpty))
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for StrVisitor {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.check(v)
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<(), E> {
        match std::str::from_utf8(v) {
            Ok(s) => self.check(s),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(v), &self)),
        }
    }
}

impl Sift for String {
    fn sift<'de, D: Deserializer<'de>>(d: D, _: Sifting<'_>) -> Result<(), D::Error> {
        d.deserialize_string(StrVisitor { non_empty: false })
    }
}

impl Sift for crate::wire::NonEmptyString {
    fn sift<'de, D: Deserializer<'de>>(d: D, _: Sifting<'_>) -> Result<(), D::Error> {
        d.deserialize_string(StrVisitor { non_empty: true })
    }
}

/// Walks any JSON value as `serde_json::Value`'s parse does (same syntax,
/// number range and string checks), building nothing.
pub struct SkipValue;

impl<'de> DeserializeSeed<'de> for SkipValue {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(AnyVisitor)
    }
}

/// Reads a map key as `Value` does (any string).
struct SkipKey;

impl<'de> DeserializeSeed<'de> for SkipKey {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(StrVisitor { non_empty: false })
    }
}

struct AnyVisitor;

impl<'de> Visitor<'de> for AnyVisitor {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(AnyVisitor)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(SkipValue)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(SkipKey)?.is_some() {
            map.next_value_seed(SkipValue)?;
        }
        Ok(())
    }
}

impl Sift for Value {
    fn sift<'de, D: Deserializer<'de>>(d: D, _: Sifting<'_>) -> Result<(), D::Error> {
        SkipValue.deserialize(d)
    }
}

/// `serde_json::Map`'s parse: an object (or a unit, which JSON never gives).
struct MapVisitor;

impl<'de> Visitor<'de> for MapVisitor {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        AnyVisitor.visit_map(map)
    }
}

impl Sift for crate::wire::Map {
    fn sift<'de, D: Deserializer<'de>>(d: D, _: Sifting<'_>) -> Result<(), D::Error> {
        d.deserialize_map(MapVisitor)
    }
}

struct OptionVisitor<'c, T>(Sifting<'c>, PhantomData<fn() -> T>);

impl<'de, T: Sift> Visitor<'de> for OptionVisitor<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("option")
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        T::sift(d, self.0)
    }
}

impl<T: Sift> Sift for Option<T> {
    fn sift<'de, D: Deserializer<'de>>(d: D, cx: Sifting<'_>) -> Result<(), D::Error> {
        d.deserialize_option(OptionVisitor::<T>(cx, PhantomData))
    }
}

struct SeqVisitor<'c, T>(Sifting<'c>, PhantomData<fn() -> T>);

impl<'de, T: Sift> Visitor<'de> for SeqVisitor<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(SiftSeed::<T>(self.0, PhantomData))?
            .is_some()
        {}
        Ok(())
    }
}

impl<T: Sift> Sift for Vec<T> {
    fn sift<'de, D: Deserializer<'de>>(d: D, cx: Sifting<'_>) -> Result<(), D::Error> {
        d.deserialize_seq(SeqVisitor::<T>(cx, PhantomData))
    }
}

/// A union's tag value: a string, never a variant index. (Inside buffered
/// content serde's derived variant identifier would take an index such as
/// `0`; the contract, and [`Check`](crate::violation::Check), do not.)
pub struct TagSeed {
    /// Whether the value is read from serde's buffered content.
    pub buffered: bool,
    /// The tag values, in variant order.
    pub tags: &'static [&'static str],
}

impl<'de> DeserializeSeed<'de> for TagSeed {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        if self.buffered {
            // Buffered content hands out what it holds: a number reaches
            // `visit_u64` and is refused there.
            d.deserialize_any(self)
        } else {
            d.deserialize_str(self)
        }
    }
}

impl<'de> Visitor<'de> for TagSeed {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant identifier")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
        self.tags
            .iter()
            .position(|t| *t == v)
            .ok_or_else(|| E::unknown_variant(v, self.tags))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<usize, E> {
        self.tags
            .iter()
            .position(|t| t.as_bytes() == v)
            .ok_or_else(|| E::custom("unknown variant"))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<usize, E> {
        Err(E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }
}

/// What a union's sift does once it has read its tag: the variant's
/// fields from the same map ([`SiftFields`]), or the typed parse of the
/// whole text.
pub trait ViaSiftFields {
    /// Checks the rest of `map` as this variant.
    fn sift_variant<'de, A: MapAccess<'de>>(
        &self,
        map: A,
        cx: Sifting<'_>,
        tag: &'static str,
    ) -> Result<(), A::Error>;
}

impl<T: SiftFields> ViaSiftFields for &Probe<T> {
    fn sift_variant<'de, A: MapAccess<'de>>(
        &self,
        map: A,
        cx: Sifting<'_>,
        tag: &'static str,
    ) -> Result<(), A::Error> {
        T::sift_fields(map, cx.in_buffer(), Some(tag))
    }
}

/// Picked for variants without [`SiftFields`].
pub trait ViaVariantParse {
    /// Gives up: the typed parse of the whole text decides.
    fn sift_variant<'de, A: MapAccess<'de>>(
        &self,
        map: A,
        cx: Sifting<'_>,
        tag: &'static str,
    ) -> Result<(), A::Error>;
}

impl<T> ViaVariantParse for Probe<T> {
    fn sift_variant<'de, A: MapAccess<'de>>(
        &self,
        _: A,
        cx: Sifting<'_>,
        _: &'static str,
    ) -> Result<(), A::Error> {
        Err(cx.fallback())
    }
}
