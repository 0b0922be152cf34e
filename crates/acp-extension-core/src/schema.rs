//! JSON Schema (draft 2020-12) of every payload kind, generated from the
//! same declarations that parse and validate it.
//!
//! What JSON Schema can express (types, required keys, enums, literals,
//! minimums, non-empty strings, `null` not allowed) is in the schema; rules
//! across fields (an answer note must reference an existing question, a
//! resource needs `text` or `blob`) are only in [`crate::validate`].
//!
//! ```
//! use acp_extension_core::validate::Kind;
//!
//! let schema = serde_json::to_value(Kind::GoalSnapshot.schema())?;
//! assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
//! assert!(schema["required"].as_array().unwrap().contains(&"objective".into()));
//! # Ok::<_, serde_json::Error>(())
//! ```

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::validate::Kind;

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

/// The schema of one kind.
pub fn schema_for(kind: Kind) -> Schema {
    kind.schema()
}

/// One document with every kind: `{"$defs": {kind-name: schema, …}}`.
pub fn all_schemas() -> Value {
    let mut defs = Map::new();
    for kind in Kind::ALL {
        defs.insert(kind.name().to_owned(), Value::from(kind.schema()));
    }
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ACP Extension Core payload kinds",
        "$defs": defs,
    })
}
