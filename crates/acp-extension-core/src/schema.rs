//! JSON Schema (draft 2020-12) of every payload kind, generated from the
//! same declarations that parse and validate it (feature `schema`, on by
//! default). [`Kind::schema`](crate::validate::Kind::schema) gives one kind's,
//! [`validate::all_schemas`](crate::validate::all_schemas) all of them; this
//! module holds the generator they share.
//!
//! What JSON Schema can express (types, required keys, enums, literals,
//! minimums, non-empty strings, `null` not allowed) is in the schema; rules
//! across fields (an answer note must reference an existing question, a
//! resource needs `text` or `blob`) are only in [`crate::validate`].
//!
//! ```
//! use acp_extension_core::session::GoalSnapshot;
//! use acp_extension_core::validate::Kind;
//!
//! let schema = serde_json::to_value(Kind::of::<GoalSnapshot>().schema())?;
//! assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
//! assert!(schema["required"].as_array().unwrap().contains(&"objective".into()));
//! # Ok::<_, serde_json::Error>(())
//! ```

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

/// The generator every schema of this crate uses (draft 2020-12).
pub fn generator() -> SchemaGenerator {
    SchemaGenerator::new(SchemaSettings::draft2020_12())
}

/// Moves the definitions collected by `g` into `schema` (`$defs`) and marks
/// it as a draft 2020-12 root.
pub(crate) fn attach_defs(schema: &mut Schema, mut g: SchemaGenerator) {
    let defs: Map<String, Value> = std::mem::take(g.definitions_mut());
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "$schema".into(),
            Value::String("https://json-schema.org/draft/2020-12/schema".into()),
        );
        if !defs.is_empty() {
            obj.insert("$defs".into(), Value::Object(defs));
        }
    }
}
