//! `/ask`: a form elicitation with contract question metadata and notes.

use super::*;

impl Turn {
    pub(super) async fn ask(&mut self) -> Step {
        if !self.elicitation_form {
            self.final_answer(
                "The client did not advertise form elicitation, so there is nothing to ask.",
            );
            return Ok(());
        }
        let question = "Which approach should I take?";
        let elicitation = |m: ElicitationMeta| self.mb().with::<fields::Elicitation>(m).build();
        let mut schema = ElicitationSchema::new().property(
            "approach",
            StringPropertySchema::new()
                .title("Approach".to_owned())
                .description(question.to_owned())
                .one_of(vec![
                    EnumOption::new("Small change", "Small change"),
                    EnumOption::new("Rewrite", "Rewrite"),
                ]),
            true,
        );
        let mut q = ElicitationQuestion::new(
            question,
            "Approach",
            vec![
                ElicitationOption::new("Small change").description("Touch as little as possible."),
                ElicitationOption::new("Rewrite").description("Start the module over."),
            ],
            false,
        )
        .id("approach");
        if self.answer_notes {
            // The note travels beside the answer and never replaces it.
            schema = schema.property(
                "approach_note",
                StringPropertySchema::new()
                    .title("Note".to_owned())
                    .description("Anything to keep in mind?".to_owned())
                    .meta(elicitation(ElicitationMeta::new().note_for("approach"))),
                false,
            );
            q = q
                .allow_custom_answer(false)
                .note(ElicitationAnswerNote::new("approach_note").title("Note"));
        } else {
            // Legacy flow: a custom answer that replaces the selection.
            schema = schema.property(
                "approach_custom",
                StringPropertySchema::new()
                    .title("Something else".to_owned())
                    .meta(elicitation(
                        ElicitationMeta::new().custom_answer_for("approach"),
                    )),
                false,
            );
            q = q.allow_custom_answer(true);
        }
        let request = CreateElicitationRequest::new(
            ElicitationFormMode::new(
                ElicitationSessionScope::new(self.session_id.clone()),
                schema,
            ),
            question,
        )
        .meta(elicitation(ElicitationMeta::new().questions(vec![q])));
        let Ok(params) = serde_json::to_value(request) else {
            return Err(Stop::Failed(Error::internal_error()));
        };
        let Ok(message) = UntypedMessage::new("elicitation/create", params) else {
            return Err(Stop::Failed(Error::internal_error()));
        };
        self.set_waiting(true);
        let sent = self.cx.send_request(message);
        let outcome = tokio::select! {
            r = sent.block_task() => Some(r),
            _ = interrupted(self.cancel.clone(), self.request_cancel.clone()) => None,
        };
        self.set_waiting(false);
        let Some(outcome) = outcome else {
            return Err(Stop::Cancelled);
        };
        let answer = match outcome {
            Ok(v) => match v.get("action").and_then(Value::as_str) {
                Some("accept") => {
                    let content = v.get("content").cloned().unwrap_or_default();
                    let choice = content
                        .get("approach_custom")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .or_else(|| content.get("approach").and_then(Value::as_str))
                        .unwrap_or("(nothing)");
                    match content.get("approach_note").and_then(Value::as_str) {
                        Some(note) if !note.is_empty() => {
                            format!("You chose: {choice} (note: {note})")
                        }
                        _ => format!("You chose: {choice}"),
                    }
                }
                Some("decline") => "You declined the question.".to_owned(),
                _ => "You dismissed the question.".to_owned(),
            },
            // The request failed (the connection closed, or an error
            // answer): nobody answered, so the turn ends cancelled.
            Err(_) => return Err(Stop::Cancelled),
        };
        self.final_answer(&answer);
        Ok(())
    }
}
