//! Reading a tagged union from a map whose tag may come after other keys:
//! the entries before the tag are buffered and replayed.

use super::*;

/// A [`MapAccess`](serde::de::MapAccess) that first replays entries
/// buffered before a union's tag, then continues with the rest of the map;
/// a second copy of the tag in the rest is an error (the JSON tree would
/// keep the last one, the typed parse the first: neither is right).
#[doc(hidden)]
pub struct Replay<A> {
    buffered: std::vec::IntoIter<(String, Value)>,
    value: Option<Value>,
    rest: A,
    tag_key: &'static str,
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Replay<A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        use serde::de::IntoDeserializer;
        if let Some((k, v)) = self.buffered.next() {
            self.value = Some(v);
            return seed.deserialize(k.into_deserializer()).map(Some);
        }
        match self.rest.next_key::<Key<'de>>()? {
            Some(k) if k.0 == self.tag_key => Err(de::Error::custom(format_args!(
                "duplicate field `{}`",
                self.tag_key
            ))),
            Some(k) => seed
                .deserialize(de::value::CowStrDeserializer::<A::Error>::new(k.0))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        if let Some(v) = self.value.take() {
            return seed.deserialize(v).map_err(de::Error::custom);
        }
        self.rest.next_value_seed(seed)
    }
}

/// Entries of an object read before its tag key.
#[doc(hidden)]
pub type Buffered = Vec<(String, Value)>;

/// Reads entries of `map` until `tag_key`, buffering the ones before it;
/// returns the tag value (a string: a number is no variant), the buffered
/// entries and the rest of the map.
#[doc(hidden)]
pub fn read_until_tag<'de, A: de::MapAccess<'de>>(
    mut map: A,
    tag_key: &'static str,
) -> Result<(Cow<'de, str>, Buffered, A), A::Error> {
    let mut buffered = Buffered::new();
    loop {
        match map.next_key::<Key<'de>>()? {
            Some(k) if k.0 == tag_key => {
                let tag: Key<'de> = map.next_value()?;
                return Ok((tag.0, buffered, map));
            }
            Some(k) => {
                let v: Value = map.next_value()?;
                buffered.push((k.0.into_owned(), v));
            }
            None => return Err(de::Error::missing_field(tag_key)),
        }
    }
}

/// Deserializes a union's variant `T` from the entries buffered before the
/// tag plus the rest of `map`.
#[doc(hidden)]
pub fn finish_variant<'de, T: Deserialize<'de>, A: de::MapAccess<'de>>(
    buffered: Buffered,
    rest: A,
    tag_key: &'static str,
) -> Result<T, A::Error> {
    T::deserialize(de::value::MapAccessDeserializer::new(Replay {
        buffered: buffered.into_iter(),
        value: None,
        rest,
        tag_key,
    }))
}
