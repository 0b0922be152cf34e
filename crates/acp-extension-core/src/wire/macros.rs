//! The declaration macros of the contract's types: `wire_struct!` (an
//! object), `wire_enum!` (a closed set of strings) and `wire_union!` (an
//! object tagged by one key). Each writes the type, its serde impls, its
//! JSON Schema and its [`Check`](crate::violation::Check) collector from one
//! list of fields.

/// Declares a contract object once: the struct, its serde impls (absent
/// versus `null` kept apart, unknown keys kept: `WireObject::extra`), its
/// JSON Schema and its [`Check`] collector.
///
/// Sections, each optional but in this order:
/// - `lit { version: Version1 = "version" }`: a required literal; `new`
///   fills it in (the type's `Default`), so callers never pass it.
/// - `req { field: T = "wireName", … }`: the key must be present. Use
///   `Option<T>` for the contract's `req|null`.
/// - `opt { field: T = "wireName", … }`: the key may be absent; `null` is a
///   violation. The field is `Option<T>`.
/// - `nullable { field: T = "wireName", … }`: absent, `null` or a value;
///   the field is [`MaybeUndefined<T>`] so all three survive a round trip.
///
/// `new` takes the `req` fields in order; every other field has a chained
/// setter of the same name. The struct implements [`WireObject`].
#[macro_export]
#[doc(hidden)]
macro_rules! wire_struct {
    // `Default` for the structs whose `new` takes no argument.
    (@default $name:ident []) => {
        impl ::std::default::Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }
    };
    (@default $name:ident [$($req:tt)+]) => {};
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $(lit { $( $(#[$ldoc:meta])* $lf:ident : $lty:ty = $lw:literal ),* $(,)? })?
            $(req { $( $(#[$rdoc:meta])* $rf:ident : $rty:ty = $rw:literal ),* $(,)? })?
            $(opt { $( $(#[$odoc:meta])* $of:ident : $oty:ty = $ow:literal ),* $(,)? })?
            $(nullable { $( $(#[$ndoc:meta])* $nf:ident : $nty:ty = $nw:literal ),* $(,)? })?
        }
        $(rule = $rule:path;)?
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            // A literal holds no information: it is written and checked, not set.
            $($( $(#[$ldoc])* pub(crate) $lf: $lty, )*)?
            $($( $(#[$rdoc])* pub $rf: $rty, )*)?
            $($( $(#[$odoc])* pub $of: Option<$oty>, )*)?
            $($( $(#[$ndoc])* pub $nf: $crate::wire::MaybeUndefined<$nty>, )*)?
            // See `WireObject::extra`.
            pub(crate) extra: $crate::wire::Map,
        }

        $crate::wire_struct!(@default $name [$($($rf)*)?]);

        impl $crate::wire::WireObject for $name {
            const KEYS: &'static [&'static str] = &[
                $($($lw,)*)? $($($rw,)*)? $($($ow,)*)? $($($nw,)*)?
            ];
            fn extra(&self) -> &$crate::wire::Map {
                &self.extra
            }
            fn extra_mut(&mut self) -> &mut $crate::wire::Map {
                &mut self.extra
            }
        }

        // A crate-private guard type (a subagent's output) builds no value.
        #[allow(dead_code)]
        impl $name {
            /// Creates the object from its required fields.
            #[allow(clippy::too_many_arguments, clippy::new_without_default)]
            pub fn new($($($rf: impl Into<$rty>,)*)?) -> Self {
                Self {
                    $($( $lf: <$lty as ::std::default::Default>::default(), )*)?
                    $($( $rf: $rf.into(), )*)?
                    $($( $of: None, )*)?
                    $($( $nf: $crate::wire::MaybeUndefined::Undefined, )*)?
                    extra: $crate::wire::Map::new(),
                }
            }

            $($(
                #[doc = concat!("Sets `", $ow, "`; `None` leaves it absent.")]
                #[must_use]
                pub fn $of(mut self, value: impl $crate::wire::IntoOption<$oty>) -> Self {
                    self.$of = value.into_option();
                    self
                }
            )*)?

            $($(
                #[doc = concat!("Sets `", $nw, "`: a value, `None` for an explicit `null`, or a [`MaybeUndefined`](", "crate::wire::MaybeUndefined", ") (`Undefined` leaves it absent).")]
                #[must_use]
                pub fn $nf(mut self, value: impl $crate::wire::IntoMaybeUndefined<$nty>) -> Self {
                    self.$nf = value.into_maybe_undefined();
                    self
                }
            )*)?
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap;
                let mut m = s.serialize_map(None)?;
                $($( m.serialize_entry($lw, &self.$lf)?; )*)?
                $($( m.serialize_entry($rw, &self.$rf)?; )*)?
                $($( if let Some(v) = &self.$of { m.serialize_entry($ow, v)?; } )*)?
                $($(
                    match &self.$nf {
                        $crate::wire::MaybeUndefined::Undefined => {}
                        $crate::wire::MaybeUndefined::Null => m.serialize_entry($nw, &())?,
                        $crate::wire::MaybeUndefined::Value(v) => m.serialize_entry($nw, v)?,
                    }
                )*)?
                for (k, v) in &self.extra {
                    if !<Self as $crate::wire::WireObject>::KEYS.contains(&k.as_str()) {
                        m.serialize_entry(k, v)?;
                    }
                }
                m.end()
            }
        }

        impl $name {
            /// Parses the fields without the cross-field rule.
            #[doc(hidden)]
            fn __deserialize_fields<'de, D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " object"))
                    }
                    #[allow(unused_mut)]
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        $($( let mut $lf: Option<$lty> = None; )*)?
                        $($( let mut $rf: Option<$rty> = None; )*)?
                        $($( let mut $of: Option<$oty> = None; )*)?
                        $($( let mut $nf: $crate::wire::MaybeUndefined<$nty> = $crate::wire::MaybeUndefined::Undefined; )*)?
                        let mut extra = $crate::wire::Map::new();
                        while let Some(key) = map.next_key::<$crate::wire::Key<'de>>()? {
                            match &*key.0 {
                                $($( $lw => $lf = Some(map.next_value()?), )*)?
                                $($( $rw => $rf = Some(map.next_value()?), )*)?
                                $($( $ow => $of = Some(map.next_value::<$oty>()?), )*)?
                                $($( $nw => $nf = match map.next_value::<Option<$nty>>()? {
                                    Some(v) => $crate::wire::MaybeUndefined::Value(v),
                                    None => $crate::wire::MaybeUndefined::Null,
                                }, )*)?
                                _ => {
                                    let v: ::serde_json::Value = map.next_value()?;
                                    extra.insert(key.0.into_owned(), v);
                                }
                            }
                        }
                        let out = $name {
                            $($( $lf: match $lf {
                                Some(v) => v,
                                None => return Err(<A::Error as ::serde::de::Error>::missing_field($lw)),
                            }, )*)?
                            $($( $rf: match $rf {
                                Some(v) => v,
                                None => return Err(<A::Error as ::serde::de::Error>::missing_field($rw)),
                            }, )*)?
                            $($( $of, )*)?
                            $($( $nf, )*)?
                            extra,
                        };
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }

        impl $crate::wire::sift::SiftFields for $name {
            #[allow(unused_mut, unused_variables, unreachable_code)]
            fn sift_fields<'de, A: ::serde::de::MapAccess<'de>>(
                mut map: A,
                cx: $crate::wire::sift::Sifting<'_>,
                tag: Option<&'static str>,
            ) -> Result<(), A::Error> {
                #[allow(unused_imports)]
                use $crate::wire::sift::{ViaParse as _, ViaSift as _};
                // A cross-field rule needs the typed value.
                $( let _ = $rule; return Err(cx.fallback()); )?
                // Keys seen so far: a second copy gives up (see `sift`).
                $($( let mut $lf = false; )*)?
                $($( let mut $rf = false; )*)?
                $($( let mut $of = false; )*)?
                $($( let mut $nf = false; )*)?
                let seen = |f: &mut bool| -> Result<(), A::Error> {
                    if ::std::mem::replace(f, true) {
                        Err(cx.fallback())
                    } else {
                        Ok(())
                    }
                };
                while let Some(key) = map.next_key::<$crate::wire::Key<'de>>()? {
                    let k = &*key.0;
                    if tag == Some(k) {
                        return Err(cx.fallback());
                    }
                    match k {
                        $($( $lw => {
                            seen(&mut $lf)?;
                            map.next_value_seed((&&$crate::wire::sift::Probe::<$lty>::new()).seed(cx))?;
                        } )*)?
                        $($( $rw => {
                            seen(&mut $rf)?;
                            map.next_value_seed((&&$crate::wire::sift::Probe::<$rty>::new()).seed(cx))?;
                        } )*)?
                        $($( $ow => {
                            seen(&mut $of)?;
                            map.next_value_seed((&&$crate::wire::sift::Probe::<$oty>::new()).seed(cx))?;
                        } )*)?
                        $($( $nw => {
                            seen(&mut $nf)?;
                            map.next_value_seed((&&$crate::wire::sift::Probe::<Option<$nty>>::new()).seed(cx))?;
                        } )*)?
                        _ => map.next_value_seed($crate::wire::sift::SkipValue)?,
                    }
                }
                $($( if !$lf { return Err(<A::Error as ::serde::de::Error>::missing_field($lw)); } )*)?
                $($( if !$rf { return Err(<A::Error as ::serde::de::Error>::missing_field($rw)); } )*)?
                Ok(())
            }
        }

        impl $crate::wire::sift::Sift for $name {
            fn sift<'de, D: ::serde::Deserializer<'de>>(d: D, cx: $crate::wire::sift::Sifting<'_>) -> Result<(), D::Error> {
                d.deserialize_map($crate::wire::sift::FieldsVisitor::<Self>(cx, ::std::marker::PhantomData))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let out = Self::__deserialize_fields(d)?;
                $(
                    if let Err((field, rule)) = $rule(&out) {
                        return Err(<D::Error as ::serde::de::Error>::custom(
                            format_args!("{}: {}", field, rule),
                        ));
                    }
                )?
                Ok(out)
            }
        }

        impl $crate::violation::Check for $name {
            const EXPECTED: &'static str = "an object";
            #[allow(unused_variables)]
            fn check(v: &::serde_json::Value, at: &str, out: &mut Vec<$crate::violation::Violation>) {
                let Some(obj) = v.as_object() else {
                    out.push($crate::violation::Violation::new(at, $crate::violation::Rule::type_of("an object", v)));
                    return;
                };
                let before = out.len();
                $($( $crate::wire::check_req::<$lty>(obj, $lw, at, out); )*)?
                $($( $crate::wire::check_req::<$rty>(obj, $rw, at, out); )*)?
                $($( $crate::wire::check_opt::<$oty>(obj, $ow, at, out); )*)?
                $($( $crate::wire::check_nullable::<$nty>(obj, $nw, at, out); )*)?
                $(
                    if out.len() == before {
                        if let Ok(parsed) = $name::__deserialize_fields(v) {
                            if let Err((field, rule)) = $rule(&parsed) {
                                out.push($crate::violation::Violation::new($crate::violation::child(at, field), rule));
                            }
                        }
                    }
                )?
            }
        }

        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            #[allow(unused_mut, unused_variables)]
            fn json_schema(g: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                let mut props = ::serde_json::Map::new();
                let mut required: Vec<&str> = Vec::new();
                $($(
                    props.insert($lw.into(), g.subschema_for::<$lty>().into());
                    required.push($lw);
                )*)?
                $($(
                    props.insert($rw.into(), g.subschema_for::<$rty>().into());
                    required.push($rw);
                )*)?
                $($( props.insert($ow.into(), g.subschema_for::<$oty>().into()); )*)?
                $($( props.insert($nw.into(), $crate::wire::nullable_schema(g.subschema_for::<$nty>()).into()); )*)?
                ::schemars::json_schema!({
                    "type": "object",
                    "properties": props,
                    "required": required,
                })
            }
        }
    };
}

/// Declares a closed set of string values: the enum, serde, schema and
/// [`Check`], with the allowed spellings listed once.
#[macro_export]
#[doc(hidden)]
macro_rules! wire_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident { $( $(#[$vdoc:meta])* $var:ident = $w:literal ),* $(,)? }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name { $( $(#[$vdoc])* $var, )* }

        impl $crate::wire::WireEnum for $name {
            const ALL: &'static [&'static str] = &[$($w),*];

            fn as_str(self) -> &'static str {
                match self { $( Self::$var => $w, )* }
            }

            fn from_wire(s: &str) -> Option<Self> {
                match s { $( $w => Some(Self::$var), )* _ => None }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str($crate::wire::WireEnum::as_str(*self))
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($crate::wire::WireEnum::as_str(*self))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let key = <$crate::wire::Key<'de> as ::serde::Deserialize>::deserialize(d)?;
                <Self as $crate::wire::WireEnum>::from_wire(&key.0)
                    .ok_or_else(|| <D::Error as ::serde::de::Error>::unknown_variant(&key.0, <Self as $crate::wire::WireEnum>::ALL))
            }
        }

        impl $crate::wire::sift::Sift for $name {
            fn sift<'de, D: ::serde::Deserializer<'de>>(d: D, _: $crate::wire::sift::Sifting<'_>) -> Result<(), D::Error> {
                <Self as ::serde::Deserialize>::deserialize(d).map(drop)
            }
        }

        impl $crate::violation::Check for $name {
            const EXPECTED: &'static str = "a string";
            fn check(v: &::serde_json::Value, at: &str, out: &mut Vec<$crate::violation::Violation>) {
                match v.as_str() {
                    Some(s) if <Self as $crate::wire::WireEnum>::from_wire(s).is_some() => {}
                    _ => out.push($crate::violation::Violation::new(at, $crate::violation::Rule::OneOf(<Self as $crate::wire::WireEnum>::ALL))),
                }
            }
        }

        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string", "enum": <Self as $crate::wire::WireEnum>::ALL })
            }
        }
    };
}

/// Declares a union discriminated by one string key (`type`,
/// `sessionUpdate`, `action`, …). Each variant wraps a `wire_struct!`
/// type that describes the other keys.
#[macro_export]
#[doc(hidden)]
macro_rules! wire_union {
    (
        $(#[$attr:meta])*
        pub enum $name:ident tag $tag:literal { $( $(#[$vdoc:meta])* $var:ident($ty:ty) = $w:literal ),* $(,)? }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize)]
        #[serde(tag = $tag)]
        #[non_exhaustive]
        pub enum $name { $( $(#[$vdoc])* #[serde(rename = $w)] $var($ty), )* }

        // Read in place when the tag comes first (entries before it are
        // buffered), with a string tag only and one copy of it: the typed
        // parse reads what the JSON tree and `Check` read.
        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("internally tagged enum ", stringify!($name)))
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, map: A) -> Result<$name, A::Error> {
                        let (tag, buffered, rest) = $crate::wire::read_until_tag(map, $tag)?;
                        match &*tag {
                            $( $w => $crate::wire::finish_variant(buffered, rest, $tag).map($name::$var), )*
                            other => Err(<A::Error as ::serde::de::Error>::unknown_variant(other, $name::TAGS)),
                        }
                    }
                }
                d.deserialize_map(V)
            }
        }

        #[allow(dead_code)] // see `wire_struct!`
        impl $name {
            /// Every tag value, in contract order.
            pub const TAGS: &'static [&'static str] = &[$($w),*];

            /// This variant's tag value.
            pub fn tag(&self) -> &'static str {
                match self { $( Self::$var(_) => $w, )* }
            }
        }


        impl $crate::wire::sift::Sift for $name {
            fn sift<'de, D: ::serde::Deserializer<'de>>(d: D, cx: $crate::wire::sift::Sifting<'_>) -> Result<(), D::Error> {
                struct V<'c>($crate::wire::sift::Sifting<'c>);
                impl<'de> ::serde::de::Visitor<'de> for V<'_> {
                    type Value = ();
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("internally tagged enum ", stringify!($name)))
                    }
                    #[allow(unused_imports)]
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                        use $crate::wire::sift::{ViaSiftFields as _, ViaVariantParse as _};
                        // serde buffers every entry before the tag; only a
                        // tag that comes first can be read in one pass.
                        match map.next_key::<$crate::wire::Key<'de>>()? {
                            Some(k) if k.0 == $tag => {}
                            Some(_) => return Err(self.0.fallback()),
                            None => return Err(<A::Error as ::serde::de::Error>::missing_field($tag)),
                        }
                        let index = map.next_value_seed($crate::wire::sift::TagSeed {
                            buffered: self.0.buffered,
                            tags: $name::TAGS,
                        })?;
                        let mut i = 0;
                        $(
                            if index == i {
                                return (&&$crate::wire::sift::Probe::<$ty>::new()).sift_variant(map, self.0, $tag);
                            }
                            i += 1;
                        )*
                        let _ = i;
                        Err(<A::Error as ::serde::de::Error>::custom("unknown variant"))
                    }
                }
                // Like serde's internally tagged enums: any value is read,
                // and only an object can hold the variant's fields.
                d.deserialize_any(V(cx))
            }
        }

        impl $crate::violation::Check for $name {
            const EXPECTED: &'static str = "an object";
            fn check(v: &::serde_json::Value, at: &str, out: &mut Vec<$crate::violation::Violation>) {
                let Some(obj) = v.as_object() else {
                    out.push($crate::violation::Violation::new(at, $crate::violation::Rule::type_of("an object", v)));
                    return;
                };
                match obj.get($tag).and_then(::serde_json::Value::as_str) {
                    $( Some($w) => <$ty as $crate::violation::Check>::check(v, at, out), )*
                    _ => out.push($crate::violation::Violation::new(
                        $crate::violation::child(at, $tag),
                        $crate::violation::Rule::OneOf(Self::TAGS),
                    )),
                }
            }
        }

        #[cfg(feature = "schema")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(g: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                let variants: Vec<::serde_json::Value> = vec![$(
                    ::schemars::json_schema!({
                        "allOf": [
                            { "type": "object", "properties": { $tag: { "const": $w } }, "required": [$tag] },
                            g.subschema_for::<$ty>(),
                        ]
                    }).into(),
                )*];
                ::schemars::json_schema!({ "oneOf": variants })
            }
        }
    };
}
