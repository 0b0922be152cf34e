//! Metadata on standard ACP form elicitation (`elicitation/create`), at
//! `_meta.<ns>.elicitation`.
//!
//! One shape, [`ElicitationMeta`], is used at request scope (`params._meta`),
//! property scope (`requestedSchema.properties.<key>._meta`) and enum-option
//! scope (`oneOf` / `anyOf` items); consumers read only the fields that
//! matter at each scope. A property with `noteFor` is an optional string
//! note that accompanies another question's answer; one with
//! `customAnswerFor` replaces that answer. [`check_elicitation_request`]
//! validates every such object in a request and the rules that tie notes
//! to questions, which JSON Schema cannot express. Agents send notes only
//! when [`notes_allowed`].
//!
//! ```
//! use acp_extension_core::elicitation::{check_elicitation_request, ElicitationAnswer};
//! use serde_json::json;
//!
//! let params = json!({
//!     "mode": "form",
//!     "message": "Input requested",
//!     "requestedSchema": {
//!         "type": "object",
//!         "properties": {
//!             "approach": {"type": "string", "enum": ["Small change", "Rewrite"]},
//!             "approach_note": {"type": "string", "_meta": {"lody": {"elicitation": {"version": 1, "noteFor": "approach"}}}},
//!         },
//!         "required": ["approach"],
//!     },
//! });
//! assert!(check_elicitation_request(&params).is_empty());
//!
//! let answer: ElicitationAnswer = serde_json::from_value(json!(["First", "Second"]))?;
//! assert_eq!(answer, ElicitationAnswer::Many(vec!["First".into(), "Second".into()]));
//! assert!(serde_json::from_value::<ElicitationAnswer>(json!({"selection": "x"})).is_err());
//! # Ok::<_, serde_json::Error>(())
//! ```

#[cfg(feature = "schema")]
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;
#[cfg(feature = "schema")]
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::namespace::{self, Namespace};
use crate::negotiation::Negotiated;
use crate::violation::{Check, Rule, Violation, child};
use crate::wire::{EpochSeconds, Map, NonNegF64, Version1};

crate::wire_struct! {
    /// One choice of an [`ElicitationQuestion`].
    pub struct ElicitationOption {
        req {
            /// What the user sees.
            label: String = "label",
        }
        opt {
            /// Longer explanation.
            description: String = "description",
            /// Preview content shown when the option is focused.
            preview: String = "preview",
        }
    }
}

crate::wire_struct! {
    /// An optional note attached to a question, stored under its own key in
    /// `answers`. It never enables a custom answer nor replaces the selection.
    pub struct ElicitationAnswerNote {
        req {
            /// The note's schema property key; distinct from every question
            /// id and every other note key.
            field_id: String = "fieldId",
        }
        opt {
            /// Short label of the note.
            title: String = "title",
            /// Longer description of the note.
            description: String = "description",
            /// Mask the note, independently of the question's answer.
            is_secret: bool = "isSecret",
        }
    }
}

crate::wire_struct! {
    /// One question of a persisted elicitation (`ElicitationMeta.questions`).
    pub struct ElicitationQuestion {
        req {
            /// The question text.
            question: String = "question",
            /// The short header.
            header: String = "header",
            /// The choices.
            options: Vec<ElicitationOption> = "options",
            /// Whether several options may be selected.
            multi_select: bool = "multiSelect",
        }
        opt {
            /// The question's key in `answers`.
            id: String = "id",
            /// Whether a free-text answer may replace the selection.
            allow_custom_answer: bool = "allowCustomAnswer",
            /// Mask the answer.
            is_secret: bool = "isSecret",
            /// An optional note accompanying the answer.
            note: ElicitationAnswerNote = "note",
        }
    }
}

/// One answer: a string or an array of strings. A structured object (such
/// as `{selection, note}`) is invalid: a note is its own answer under its
/// own key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// A single answer (or a note).
    One(String),
    /// The selections of a multi-select question.
    Many(Vec<String>),
}

impl From<&str> for ElicitationAnswer {
    fn from(s: &str) -> Self {
        ElicitationAnswer::One(s.to_owned())
    }
}

impl From<String> for ElicitationAnswer {
    fn from(s: String) -> Self {
        ElicitationAnswer::One(s)
    }
}

impl From<Vec<String>> for ElicitationAnswer {
    fn from(v: Vec<String>) -> Self {
        ElicitationAnswer::Many(v)
    }
}

impl Check for ElicitationAnswer {
    const EXPECTED: &'static str = "a string or an array of strings";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        match v {
            Value::String(_) => {}
            Value::Array(_) => <Vec<String>>::check(v, at, out),
            other => out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, other))),
        }
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for ElicitationAnswer {
    fn schema_name() -> Cow<'static, str> {
        "ElicitationAnswer".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [
                { "type": "string" },
                { "type": "array", "items": { "type": "string" } },
            ]
        })
    }
}

/// The `answers` map of [`ElicitationMeta`]: schema key → answer, in wire
/// order (notes under their own keys). Derefs to the [`IndexMap`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ElicitationAnswers(pub IndexMap<String, ElicitationAnswer>);

impl std::ops::Deref for ElicitationAnswers {
    type Target = IndexMap<String, ElicitationAnswer>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for ElicitationAnswers {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl From<IndexMap<String, ElicitationAnswer>> for ElicitationAnswers {
    fn from(m: IndexMap<String, ElicitationAnswer>) -> Self {
        Self(m)
    }
}

impl<K: Into<String>, V: Into<ElicitationAnswer>> FromIterator<(K, V)> for ElicitationAnswers {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl Check for ElicitationAnswers {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        <IndexMap<String, ElicitationAnswer>>::check(v, at, out);
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for ElicitationAnswers {
    fn schema_name() -> Cow<'static, str> {
        "ElicitationAnswers".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "additionalProperties": g.subschema_for::<ElicitationAnswer>(),
        })
    }
}

crate::wire_struct! {
    /// Elicitation metadata at `_meta.<ns>.elicitation` (request, property
    /// or enum-option scope).
    ///
    /// `noteFor` and `customAnswerFor` exclude each other: a note never
    /// replaces the answer it accompanies.
    ///
    /// ```
    /// use acp_extension_core::elicitation::ElicitationMeta;
    ///
    /// let note: ElicitationMeta = serde_json::from_value(serde_json::json!({"version": 1, "noteFor": "approach"}))?;
    /// assert_eq!(note.note_for.as_deref(), Some("approach"));
    /// let both = serde_json::json!({"version": 1, "noteFor": "a", "customAnswerFor": "a"});
    /// assert!(serde_json::from_value::<ElicitationMeta>(both).is_err());
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub struct ElicitationMeta {
        lit {
            /// Always the literal `1`; other versions need explicit negotiation.
            version: Version1 = "version",
        }
        req {
        }
        opt {
            /// When the request resolves by itself, as Unix epoch seconds.
            auto_resolve_at_epoch_seconds: EpochSeconds = "autoResolveAtEpochSeconds",
            /// Property scope: this property is a free-text answer that
            /// replaces the referenced question's selection.
            custom_answer_for: String = "customAnswerFor",
            /// Property scope: this property is an optional string note that
            /// accompanies the referenced question's answer.
            note_for: String = "noteFor",
            /// Mask the value.
            secret: bool = "secret",
            /// Preview content.
            preview: String = "preview",
            /// The questions, for persisted elicitations.
            questions: Vec<ElicitationQuestion> = "questions",
            /// The answers by schema key (notes under their own keys).
            answers: ElicitationAnswers = "answers",
        }
        nullable {
            /// Seconds after which the request resolves by itself; `null` means never.
            auto_resolve_after_seconds: NonNegF64 = "autoResolveAfterSeconds",
        }
    }
    rule = note_is_not_custom_answer;
}

fn relation(id: &'static str, message: impl Into<String>) -> Rule {
    Rule::Relation {
        id,
        message: message.into(),
    }
}

fn note_is_not_custom_answer(m: &ElicitationMeta) -> Result<(), (&'static str, Rule)> {
    if m.note_for.is_some() && m.custom_answer_for.is_some() {
        return Err(("noteFor", note_with_custom_answer()));
    }
    Ok(())
}

fn note_with_custom_answer() -> Rule {
    relation(
        "elicitation-note-with-custom-answer",
        "a note (`noteFor`) must not also declare `customAnswerFor`",
    )
}

/// Whether an agent may send note properties (`noteFor`): the client
/// advertised `elicitation: {version: 1, answerNotes: true}` under
/// `_meta.<ns>` **and** standard ACP form elicitation. Otherwise keep the
/// custom-answer flow and never relabel a note as a replacement answer.
pub fn notes_allowed(negotiated: &Negotiated) -> bool {
    negotiated.answer_notes() && negotiated.form_elicitation
}

/// Every violation of one `_meta.<ns>.elicitation` object: its shape plus
/// the key rules of its `questions` (non-empty, distinct question ids and
/// note keys).
pub fn check_elicitation_meta(meta: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    check_meta_at(meta, "", &mut out);
    out
}

fn check_meta_at(meta: &Value, at: &str, out: &mut Vec<Violation>) {
    ElicitationMeta::check(meta, at, out);
    if let Some(questions) = meta.get("questions").and_then(Value::as_array) {
        check_question_keys(questions, &child(at, "questions"), out);
    }
}

/// Question ids and note `fieldId`s: non-empty and all distinct.
fn check_question_keys(questions: &[Value], at: &str, out: &mut Vec<Violation>) {
    let id_of = |q: &Value| q.get("id").and_then(Value::as_str).map(str::to_owned);
    let mut ids: HashSet<String> = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        let Some(id) = id_of(q) else { continue };
        let pointer = child(&format!("{at}/{i}"), "id");
        if id.is_empty() {
            out.push(Violation::new(
                pointer,
                relation(
                    "elicitation-question-id-empty",
                    "a question id must not be empty",
                ),
            ));
        } else if !ids.insert(id.clone()) {
            out.push(Violation::new(
                pointer,
                relation(
                    "elicitation-question-id-duplicate",
                    format!("question id `{id}` is used by another question"),
                ),
            ));
        }
    }
    let mut notes: HashSet<String> = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        let Some(field_id) = q
            .get("note")
            .and_then(|n| n.get("fieldId"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let pointer = child(&child(&format!("{at}/{i}"), "note"), "fieldId");
        if field_id.is_empty() {
            out.push(Violation::new(
                pointer,
                relation("elicitation-note-key-empty", "a note key must not be empty"),
            ));
        } else if ids.contains(field_id) || !notes.insert(field_id.to_owned()) {
            out.push(Violation::new(
                pointer,
                relation(
                    "elicitation-note-key-collision",
                    format!(
                        "note key `{field_id}` collides with a question id or another note key"
                    ),
                ),
            ));
        }
    }
}

/// Validates every `_meta.<ns>.elicitation` of an `elicitation/create`
/// request's `params`, and the note rules between schema properties.
///
/// Checked: the request-scope meta (`/_meta/<ns>/elicitation`), each
/// property's meta (`/requestedSchema/properties/<key>/_meta/<ns>/elicitation`)
/// and the enum-option metas below it (`oneOf`, `anyOf`, `items`). For each
/// note property (`noteFor`, read with `ua` winning over `lody`): it
/// references another existing property of the same schema that is a
/// question (neither a note nor a custom answer), at most one note per
/// question, non-empty keys, and the note is not listed in `required`.
/// Violations carry `Rule::Relation` ids starting with `elicitation-note-`.
///
/// Pointers are relative to `params`. Any input shape is accepted without
/// panicking; a `params` that is not an object is one violation.
pub fn check_elicitation_request(params: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(obj) = params.as_object() else {
        out.push(Violation::new("", Rule::type_of("an object", params)));
        return out;
    };
    check_scope(obj, "", &mut out);
    if let Some(schema) = obj.get("requestedSchema").and_then(Value::as_object) {
        check_schema(schema, "/requestedSchema", &mut out);
    }
    out
}

/// Checks `_meta.<ns>.elicitation` of one object, in both namespaces.
fn check_scope(obj: &Map, at: &str, out: &mut Vec<Violation>) {
    let Some(meta) = obj.get("_meta").and_then(Value::as_object) else {
        return;
    };
    for ns in Namespace::ALL {
        if let Some(e) = namespace::section(meta, ns).and_then(|s| s.get("elicitation")) {
            let at = child(&child(&child(at, "_meta"), ns.key()), "elicitation");
            check_meta_at(e, &at, out);
        }
    }
}

/// Checks the option metas of `oneOf` / `anyOf` arrays of a (sub)schema.
fn check_options(schema: &Map, at: &str, out: &mut Vec<Violation>) {
    for key in ["oneOf", "anyOf"] {
        if let Some(items) = schema.get(key).and_then(Value::as_array) {
            for (i, item) in items.iter().enumerate() {
                if let Some(item) = item.as_object() {
                    check_scope(item, &format!("{}/{i}", child(at, key)), out);
                }
            }
        }
    }
}

/// The winning elicitation meta of a property, with its pointer.
fn property_meta<'a>(prop: &'a Value, at: &str) -> Option<(&'a Map, String)> {
    let meta = prop.get("_meta")?.as_object()?;
    let (ns, e) = namespace::read_key(meta, "elicitation")?;
    let pointer = child(&child(&child(at, "_meta"), ns.key()), "elicitation");
    Some((e.as_object()?, pointer))
}

fn check_schema(schema: &Map, at: &str, out: &mut Vec<Violation>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let props_at = child(at, "properties");

    // Shapes of every meta, at every scope.
    for (key, prop) in props {
        let Some(p) = prop.as_object() else { continue };
        let p_at = child(&props_at, key);
        check_scope(p, &p_at, out);
        check_options(p, &p_at, out);
        if let Some(items) = p.get("items").and_then(Value::as_object) {
            let items_at = child(&p_at, "items");
            check_scope(items, &items_at, out);
            check_options(items, &items_at, out);
        }
    }

    // Roles of the properties.
    let str_field = |m: &Map, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut note_for: IndexMap<&str, (String, String)> = IndexMap::new();
    let mut custom: HashSet<&str> = HashSet::new();
    for (key, prop) in props {
        let Some((m, pointer)) = property_meta(prop, &child(&props_at, key)) else {
            continue;
        };
        if m.contains_key("customAnswerFor") {
            custom.insert(key.as_str());
        }
        if let Some(target) = str_field(m, "noteFor") {
            note_for.insert(key.as_str(), (target, child(&pointer, "noteFor")));
        }
    }

    // Note rules.
    let mut notes_per_question: HashMap<&str, usize> = HashMap::new();
    for (&key, (target, pointer)) in &note_for {
        let broken = |id: &'static str, message: String| {
            Violation::new(pointer.clone(), relation(id, message))
        };
        if key.is_empty() || target.is_empty() {
            out.push(broken(
                "elicitation-note-key-empty",
                "note keys and the question keys they reference must not be empty".into(),
            ));
        } else if key == target {
            out.push(broken(
                "elicitation-note-self-reference",
                format!("note `{key}` references itself"),
            ));
        } else if !props.contains_key(target.as_str()) {
            out.push(broken(
                "elicitation-note-unknown-question",
                format!(
                    "note `{key}` references `{target}`, which is not a property of this schema"
                ),
            ));
        } else if note_for.contains_key(target.as_str()) {
            out.push(broken(
                "elicitation-note-references-note",
                format!("note `{key}` references `{target}`, which is itself a note"),
            ));
        } else if custom.contains(target.as_str()) {
            out.push(broken(
                "elicitation-note-references-custom-answer",
                format!("note `{key}` references `{target}`, which is a custom-answer property"),
            ));
        } else {
            let n = notes_per_question.entry(target.as_str()).or_default();
            *n += 1;
            if *n > 1 {
                out.push(broken(
                    "elicitation-note-duplicate",
                    format!(
                        "question `{target}` already has a note; at most one note per question"
                    ),
                ));
            }
        }
    }

    // The note property is never required.
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        let required_at = child(at, "required");
        for (i, r) in required.iter().enumerate() {
            if let Some(r) = r.as_str()
                && note_for.contains_key(r)
            {
                out.push(Violation::new(
                    format!("{required_at}/{i}"),
                    relation(
                        "elicitation-note-required",
                        format!("note `{r}` must not be listed in `required`"),
                    ),
                ));
            }
        }
    }
}
