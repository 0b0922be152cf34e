//! `/title`: a generated session title.

use super::*;

impl Turn {
    pub(super) fn title(&mut self, text: Option<String>) -> Step {
        let source = match text {
            Some(t) => t,
            None => self
                .with(|s, _| s.history.first().map(|t| t.user_text.clone()))?
                .unwrap_or_else(|| "Untitled session".to_owned()),
        };
        let title = generated_title(&source);
        let now = time::now();
        self.with(|s, _| {
            s.title = Some(title.clone());
            s.updated_at = now;
        })?;
        let mut update = SessionInfoUpdate::new()
            .title(title.clone())
            .updated_at(time::rfc3339(now));
        if self.shared.has(Feature::SessionTitle) {
            update = update.meta(
                self.mb()
                    .with::<fields::TitleSource>(TitleSource::Generated)
                    .build(),
            );
        }
        self.send(SessionUpdate::SessionInfoUpdate(update));
        self.final_answer(&format!("Title: {title}"));
        Ok(())
    }
}

/// A title from text: its first six words, capitalized.
pub(super) fn generated_title(text: &str) -> String {
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| !w.starts_with('/'))
        .take(6)
        .collect();
    let joined = if words.is_empty() {
        "Untitled session".to_owned()
    } else {
        words.join(" ")
    };
    let mut chars = joined.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => joined,
    }
}
