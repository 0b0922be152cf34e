//! Elicitation metadata (contract-facts §4, §17.4): types, the note rules
//! on `elicitation/create` requests, and the real adapters' requests.

mod common;

use acp_extension_core::capabilities::ClientExtensionCapabilities;
use acp_extension_core::elicitation::{
    ElicitationAnswer, ElicitationAnswerNote, ElicitationAnswers, ElicitationMeta,
    ElicitationOption, ElicitationQuestion, check_elicitation_meta, check_elicitation_request,
    notes_allowed,
};
use acp_extension_core::negotiation::negotiate;
use acp_extension_core::validate::{Check, Violation, check};
use acp_extension_core::wire::WireObject;
use acp_extension_core::wire::{MaybeUndefined, NonNegF64};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn corpus(path: &str) -> String {
    common::read(&format!("corpus/{path}"))
}

fn round_trip<T: Check + DeserializeOwned + Serialize>(v: Value) -> T {
    assert_eq!(check::<T>(&v), vec![], "violations in {v}");
    let parsed: T = serde_json::from_value(v.clone()).expect("parses");
    assert_eq!(serde_json::to_value(&parsed).unwrap(), v);
    parsed
}

fn ids(violations: &[Violation]) -> Vec<(String, &'static str)> {
    violations
        .iter()
        .map(|v| (v.pointer.clone(), v.rule.id()))
        .collect()
}

fn rejects<T: Check + DeserializeOwned>(v: Value, pointer: &str, id: &str) {
    assert!(
        serde_json::from_value::<T>(v.clone()).is_err(),
        "accepted {v}"
    );
    assert_eq!(
        ids(&check::<T>(&v)),
        vec![(pointer.to_owned(), id)],
        "for {v}"
    );
}

fn question() -> Value {
    json!({
        "id": "approach",
        "question": "Which approach?",
        "header": "Approach",
        "options": [{"label": "Small change"}],
        "multiSelect": false,
        "allowCustomAnswer": true,
    })
}

// ---- §17.4 accepted ---------------------------------------------------------

#[test]
fn fixture_question_is_accepted() {
    let q: ElicitationQuestion = round_trip(question());
    assert_eq!(q.id.as_deref(), Some("approach"));
    assert_eq!(q.options[0].label, "Small change");
    assert!(!q.multi_select);
    assert_eq!(q.allow_custom_answer, Some(true));
    assert!(q.note.is_none());
}

#[test]
fn fixture_property_metas_are_accepted() {
    let custom: ElicitationMeta =
        round_trip(json!({"version": 1, "customAnswerFor": "approach", "secret": false}));
    assert_eq!(custom.custom_answer_for.as_deref(), Some("approach"));
    assert_eq!(custom.secret, Some(false));
    let note: ElicitationMeta =
        round_trip(json!({"version": 1, "noteFor": "approach", "secret": true}));
    assert_eq!(note.note_for.as_deref(), Some("approach"));
}

#[test]
fn fixture_answers_are_accepted() {
    let answers: ElicitationAnswers =
        round_trip(json!({"approach": "Something else", "multiple": ["First", "Second"]}));
    assert_eq!(
        answers["approach"],
        ElicitationAnswer::One("Something else".into())
    );
    assert_eq!(
        answers["multiple"],
        ElicitationAnswer::Many(vec!["First".into(), "Second".into()])
    );
    round_trip::<ElicitationAnswer>(json!([]));
}

#[test]
fn fixture_client_capabilities_are_accepted() {
    for caps in [
        json!({"elicitation": {"version": 1, "answerNotes": true}}),
        json!({}),
        json!({"elicitation": {"version": 1}}),
    ] {
        round_trip::<ClientExtensionCapabilities>(caps);
    }
}

#[test]
fn fixture_question_with_note_and_persisted_meta_are_accepted() {
    let mut q = question();
    q["allowCustomAnswer"] = json!(false);
    q["note"] = json!({"fieldId": "approach_note", "title": "Context", "isSecret": true});
    let parsed: ElicitationQuestion = round_trip(q.clone());
    let note = parsed.note.unwrap();
    assert_eq!(note.field_id, "approach_note");
    assert_eq!(note.is_secret, Some(true));

    let persisted = json!({
        "version": 1,
        "questions": [q],
        "answers": {"approach": "Small change", "approach_note": "Keep the public API stable."},
    });
    let meta: ElicitationMeta = round_trip(persisted.clone());
    assert_eq!(meta.answers.unwrap().len(), 2);
    assert!(check_elicitation_meta(&persisted).is_empty());
}

// ---- §17.4 rejected ---------------------------------------------------------

#[test]
fn structured_answer_objects_are_rejected() {
    let object = json!({"selection": "Small change", "note": "Keep it small"});
    rejects::<ElicitationAnswer>(object.clone(), "", "type");
    rejects::<ElicitationMeta>(
        json!({"version": 1, "answers": {"approach": object}}),
        "/answers/approach",
        "type",
    );
    rejects::<ElicitationAnswer>(json!(["a", 1]), "/1", "type");
    rejects::<ElicitationAnswer>(json!(null), "", "type");
    rejects::<ElicitationAnswer>(json!(5), "", "type");
}

#[test]
fn note_without_field_id_is_rejected() {
    rejects::<ElicitationAnswerNote>(json!({"title": "Context"}), "/fieldId", "required");
    let mut q = question();
    q["note"] = json!({"title": "Context"});
    rejects::<ElicitationQuestion>(q, "/note/fieldId", "required");
}

#[test]
fn elicitation_capability_version_two_is_rejected() {
    rejects::<ClientExtensionCapabilities>(
        json!({"elicitation": {"version": 2}}),
        "/elicitation/version",
        "literal",
    );
    let n = negotiate(
        &json!({}),
        &json!({"elicitation": {"form": {}}, "_meta": {"lody": {"elicitation": {"version": 2, "answerNotes": true}}}}),
    );
    assert!(!n.answer_notes());
    assert!(!notes_allowed(&n));
}

// ---- ElicitationMeta fields -------------------------------------------------

#[test]
fn auto_resolve_after_is_nullable_but_auto_resolve_at_is_not() {
    let m: ElicitationMeta = round_trip(json!({"version": 1, "autoResolveAfterSeconds": null}));
    assert_eq!(m.auto_resolve_after_seconds, MaybeUndefined::Null);
    let m: ElicitationMeta = round_trip(json!({"version": 1, "autoResolveAfterSeconds": 60}));
    assert_eq!(
        m.auto_resolve_after_seconds,
        MaybeUndefined::Value(NonNegF64::new(60.0).unwrap())
    );
    let m: ElicitationMeta = round_trip(json!({"version": 1}));
    assert_eq!(m.auto_resolve_after_seconds, MaybeUndefined::Undefined);
    round_trip::<ElicitationMeta>(json!({"version": 1, "autoResolveAtEpochSeconds": 1767225600.5}));

    rejects::<ElicitationMeta>(
        json!({"version": 1, "autoResolveAtEpochSeconds": null}),
        "/autoResolveAtEpochSeconds",
        "not-null",
    );
    rejects::<ElicitationMeta>(
        json!({"version": 1, "autoResolveAfterSeconds": -1}),
        "/autoResolveAfterSeconds",
        "finite-non-negative",
    );
    rejects::<ElicitationMeta>(
        json!({"version": 1, "autoResolveAfterSeconds": "60"}),
        "/autoResolveAfterSeconds",
        "type",
    );
}

#[test]
fn meta_rejections() {
    rejects::<ElicitationMeta>(json!({}), "/version", "required");
    rejects::<ElicitationMeta>(json!({"version": 2}), "/version", "literal");
    rejects::<ElicitationMeta>(json!({"version": "1"}), "/version", "literal");
    for key in ["customAnswerFor", "noteFor", "preview"] {
        rejects::<ElicitationMeta>(
            json!({"version": 1, key: null}),
            &format!("/{key}"),
            "not-null",
        );
        rejects::<ElicitationMeta>(json!({"version": 1, key: 5}), &format!("/{key}"), "type");
    }
    rejects::<ElicitationMeta>(json!({"version": 1, "secret": "yes"}), "/secret", "type");
    rejects::<ElicitationMeta>(json!({"version": 1, "questions": {}}), "/questions", "type");
    let both = json!({"version": 1, "noteFor": "a", "customAnswerFor": "a"});
    assert!(serde_json::from_value::<ElicitationMeta>(both.clone()).is_err());
    assert_eq!(
        ids(&check_elicitation_meta(&both)),
        [("/noteFor".to_owned(), "elicitation-note-with-custom-answer")]
    );
}

#[test]
fn question_and_option_rejections() {
    for key in ["question", "header", "options", "multiSelect"] {
        let mut q = question();
        q.as_object_mut().unwrap().remove(key);
        rejects::<ElicitationQuestion>(q, &format!("/{key}"), "required");
    }
    let mut q = question();
    q["options"] = json!([{"label": "a"}, {"description": "no label"}]);
    rejects::<ElicitationQuestion>(q, "/options/1/label", "required");
    let mut q = question();
    q["id"] = json!(null);
    rejects::<ElicitationQuestion>(q, "/id", "not-null");
    rejects::<ElicitationOption>(json!({"label": "a", "preview": 1}), "/preview", "type");
    // Unknown keys survive.
    let o: ElicitationOption = round_trip(json!({"label": "a", "icon": "x"}));
    assert_eq!(o.extra()["icon"], json!("x"));
}

#[test]
fn builders_produce_the_wire_shape() {
    let meta = ElicitationMeta::new()
        .questions(vec![
            ElicitationQuestion::new(
                "Which approach?",
                "Approach",
                vec![ElicitationOption::new("Small change")],
                false,
            )
            .id("approach")
            .note(ElicitationAnswerNote::new("approach_note").title("Context")),
        ])
        .answers(ElicitationAnswers::from_iter([(
            "approach",
            "Small change",
        )]))
        .auto_resolve_after_seconds(None);
    assert_eq!(
        serde_json::to_value(&meta).unwrap(),
        json!({
            "version": 1,
            "questions": [{
                "question": "Which approach?",
                "header": "Approach",
                "options": [{"label": "Small change"}],
                "multiSelect": false,
                "id": "approach",
                "note": {"fieldId": "approach_note", "title": "Context"},
            }],
            "answers": {"approach": "Small change"},
            "autoResolveAfterSeconds": null,
        })
    );
}

#[test]
fn persisted_question_keys_are_distinct_and_non_empty() {
    let q = |id: &str, note: &str| {
        json!({"id": id, "question": "q", "header": "h", "options": [], "multiSelect": false,
               "note": {"fieldId": note}})
    };
    let found = |questions: Vec<Value>| {
        ids(&check_elicitation_meta(
            &json!({"version": 1, "questions": questions}),
        ))
    };
    assert!(found(vec![q("a", "a_note"), q("b", "b_note")]).is_empty());
    assert_eq!(
        found(vec![q("a", "b"), q("b", "b_note")]),
        [(
            "/questions/0/note/fieldId".to_owned(),
            "elicitation-note-key-collision"
        )]
    );
    assert_eq!(
        found(vec![q("a", "n"), q("b", "n")]),
        [(
            "/questions/1/note/fieldId".to_owned(),
            "elicitation-note-key-collision"
        )]
    );
    assert_eq!(
        found(vec![q("a", "a")]),
        [(
            "/questions/0/note/fieldId".to_owned(),
            "elicitation-note-key-collision"
        )]
    );
    assert_eq!(
        found(vec![q("a", "")]),
        [(
            "/questions/0/note/fieldId".to_owned(),
            "elicitation-note-key-empty"
        )]
    );
    assert_eq!(
        found(vec![q("", "x")]),
        [(
            "/questions/0/id".to_owned(),
            "elicitation-question-id-empty"
        )]
    );
    assert_eq!(
        found(vec![q("a", "x"), q("a", "y")]),
        [(
            "/questions/1/id".to_owned(),
            "elicitation-question-id-duplicate"
        )]
    );
}

// ---- Requests: shapes at every scope ----------------------------------------

fn el(meta: Value) -> Value {
    json!({"_meta": {"lody": {"elicitation": meta}}})
}

/// A request whose schema has the given properties and `required` list.
fn request(properties: Value, required: Value) -> Value {
    json!({
        "sessionId": "s",
        "mode": "form",
        "message": "Input requested",
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    })
}

fn prop(meta: Option<Value>) -> Value {
    let mut p = json!({"type": "string"});
    if let Some(m) = meta {
        p.as_object_mut()
            .unwrap()
            .extend(el(m).as_object().unwrap().clone());
    }
    p
}

#[test]
fn violations_point_into_the_request() {
    let mut params = request(
        json!({
            "approach": {
                "type": "string",
                "oneOf": [{"const": "a", "title": "A", "_meta": {"ua": {"elicitation": {"version": 2}}}}],
            },
            "approach_note": prop(Some(json!({"version": 1, "noteFor": 5}))),
            "many": {"type": "array", "items": {"anyOf": [
                {"const": "x", "_meta": {"lody": {"elicitation": {"version": 1, "preview": null}}}},
            ]}},
        }),
        json!(["approach"]),
    );
    params["_meta"] =
        json!({"lody": {"elicitation": {"version": 1, "autoResolveAfterSeconds": -5}}});
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [
            (
                "/_meta/lody/elicitation/autoResolveAfterSeconds".to_owned(),
                "finite-non-negative"
            ),
            (
                "/requestedSchema/properties/approach/oneOf/0/_meta/ua/elicitation/version"
                    .to_owned(),
                "literal"
            ),
            (
                "/requestedSchema/properties/approach_note/_meta/lody/elicitation/noteFor"
                    .to_owned(),
                "type"
            ),
            (
                "/requestedSchema/properties/many/items/anyOf/0/_meta/lody/elicitation/preview"
                    .to_owned(),
                "not-null"
            ),
        ]
    );
}

#[test]
fn both_namespaces_are_validated() {
    let mut params = request(json!({}), json!([]));
    params["_meta"] = json!({
        "ua": {"elicitation": {"version": 1}},
        "lody": {"elicitation": {"version": 1, "secret": 1}},
    });
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [("/_meta/lody/elicitation/secret".to_owned(), "type")]
    );
}

// ---- Requests: note rules ---------------------------------------------------

fn note(target: &str) -> Value {
    prop(Some(json!({"version": 1, "noteFor": target})))
}

fn custom(target: &str) -> Value {
    prop(Some(json!({"version": 1, "customAnswerFor": target})))
}

fn note_pointer(key: &str) -> String {
    format!("/requestedSchema/properties/{key}/_meta/lody/elicitation/noteFor")
}

#[test]
fn a_valid_note_passes() {
    let params = request(
        json!({"approach": prop(None), "approach_note": note("approach")}),
        json!(["approach"]),
    );
    assert!(check_elicitation_request(&params).is_empty());
    // A note and a custom answer may accompany the same question.
    let params = request(
        json!({"approach": prop(None), "approach_note": note("approach"), "approach_other": custom("approach")}),
        json!(["approach"]),
    );
    assert!(check_elicitation_request(&params).is_empty());
}

#[test]
fn a_note_must_reference_an_existing_question() {
    let params = request(json!({"approach_note": note("approach")}), json!([]));
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(
            note_pointer("approach_note"),
            "elicitation-note-unknown-question"
        )]
    );
}

#[test]
fn a_note_must_not_reference_itself() {
    let params = request(json!({"a": note("a")}), json!([]));
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(note_pointer("a"), "elicitation-note-self-reference")]
    );
}

#[test]
fn a_note_must_not_reference_another_note() {
    let params = request(
        json!({"q": prop(None), "q_note": note("q"), "q_note_note": note("q_note")}),
        json!([]),
    );
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(
            note_pointer("q_note_note"),
            "elicitation-note-references-note"
        )]
    );
}

#[test]
fn a_note_must_not_reference_a_custom_answer() {
    let params = request(
        json!({"q": prop(None), "q_other": custom("q"), "q_note": note("q_other")}),
        json!([]),
    );
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(
            note_pointer("q_note"),
            "elicitation-note-references-custom-answer"
        )]
    );
}

#[test]
fn a_note_must_not_also_be_a_custom_answer() {
    let params = request(
        json!({"q": prop(None), "q_note": prop(Some(json!({"version": 1, "noteFor": "q", "customAnswerFor": "q"})))}),
        json!([]),
    );
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(
            note_pointer("q_note"),
            "elicitation-note-with-custom-answer"
        )]
    );
}

#[test]
fn at_most_one_note_per_question() {
    let params = request(
        json!({"q": prop(None), "q_note": note("q"), "q_note1": note("q")}),
        json!([]),
    );
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(note_pointer("q_note1"), "elicitation-note-duplicate")]
    );
}

#[test]
fn note_keys_are_non_empty() {
    let params = request(json!({"": prop(None), "n": note("")}), json!([]));
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(note_pointer("n"), "elicitation-note-key-empty")]
    );
    let params = request(json!({"q": prop(None), "": note("q")}), json!([]));
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(note_pointer(""), "elicitation-note-key-empty")]
    );
}

#[test]
fn a_note_is_never_required() {
    let params = request(
        json!({"q": prop(None), "q_note": note("q")}),
        json!(["q", "q_note"]),
    );
    assert_eq!(
        ids(&check_elicitation_request(&params)),
        [(
            "/requestedSchema/required/1".to_owned(),
            "elicitation-note-required"
        )]
    );
}

#[test]
fn ua_decides_a_property_role() {
    // The lody spelling alone would be a self reference; ua wins.
    let params = request(
        json!({
            "q": prop(None),
            "q_note": {"type": "string", "_meta": {
                "ua": {"elicitation": {"version": 1, "noteFor": "q"}},
                "lody": {"elicitation": {"version": 1, "noteFor": "q_note"}},
            }},
        }),
        json!([]),
    );
    assert!(check_elicitation_request(&params).is_empty());
}

#[test]
fn malformed_requests_never_panic() {
    for params in [
        Value::Null,
        json!([]),
        json!("x"),
        json!({}),
        json!({"_meta": []}),
        json!({"_meta": {"lody": []}}),
        json!({"_meta": {"lody": {"elicitation": []}}}),
        json!({"requestedSchema": []}),
        json!({"requestedSchema": {"properties": []}}),
        json!({"requestedSchema": {"properties": {"a": [], "b": null, "c": {"_meta": 1}}}}),
        json!({"requestedSchema": {"properties": {"a": {"oneOf": {}, "anyOf": [1, null], "items": []}}}}),
        json!({"requestedSchema": {"properties": {"a": note("a")}, "required": [1, null, "a"]}}),
        json!({"requestedSchema": {"properties": {"a": {"_meta": {"lody": {"elicitation": {"noteFor": ["x"]}}}}}}}),
    ] {
        let _ = check_elicitation_request(&params);
        let _ = check_elicitation_meta(&params);
    }
    assert_eq!(
        ids(&check_elicitation_request(&json!([]))),
        [(String::new(), "type")]
    );
    assert_eq!(
        ids(&check_elicitation_request(
            &json!({"_meta": {"lody": {"elicitation": []}}})
        )),
        [("/_meta/lody/elicitation".to_owned(), "type")]
    );
}

// ---- Real requests ------------------------------------------------------------

#[test]
fn corpus_requests_have_no_violations() {
    for name in [
        "elicitation-user-input-answer-notes",
        "elicitation-user-input-existing-other",
        "elicitation-user-input-note-collision-after",
    ] {
        let file: Value = serde_json::from_str(&corpus(&format!(
            "acp-extension-codex/src____tests____CodexACPAgent__data__{name}.json"
        )))
        .unwrap();
        assert_eq!(file["method"], json!("createElicitation"));
        let params = &file["args"][0];
        assert_eq!(check_elicitation_request(params), vec![], "{name}");
    }
}

#[test]
fn corpus_note_request_reads_as_a_note() {
    let file: Value = serde_json::from_str(&corpus(
        "acp-extension-codex/src____tests____CodexACPAgent__data__elicitation-user-input-answer-notes.json",
    ))
    .unwrap();
    let props = &file["args"][0]["requestedSchema"]["properties"];
    let note: ElicitationMeta =
        round_trip(props["next_step_note1"]["_meta"]["lody"]["elicitation"].clone());
    assert_eq!(note.note_for.as_deref(), Some("next_step"));
    assert_eq!(note.secret, Some(true));
    let request_scope: ElicitationMeta =
        round_trip(file["args"][0]["_meta"]["lody"]["elicitation"].clone());
    assert_eq!(
        request_scope.auto_resolve_after_seconds,
        MaybeUndefined::Value(NonNegF64::new(60.0).unwrap())
    );
}

// ---- notes_allowed ------------------------------------------------------------

#[test]
fn notes_need_answer_notes_and_form_support() {
    let client = |form: bool, caps: Value| {
        let mut c = json!({"_meta": {"lody": caps}});
        if form {
            c["elicitation"] = json!({"form": {}});
        }
        c
    };
    let notes = json!({"elicitation": {"version": 1, "answerNotes": true}});
    assert!(notes_allowed(&negotiate(
        &json!({}),
        &client(true, notes.clone())
    )));
    assert!(!notes_allowed(&negotiate(
        &json!({}),
        &client(false, notes)
    )));
    assert!(!notes_allowed(&negotiate(
        &json!({}),
        &client(true, json!({"elicitation": {"version": 1}}))
    )));
    assert!(!notes_allowed(&negotiate(
        &json!({}),
        &client(true, json!({}))
    )));
}
