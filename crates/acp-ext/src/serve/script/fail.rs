//! `/fail`: a notice, then a failed turn.

use super::*;

impl Turn {
    pub(super) fn fail(&mut self) -> Step {
        let message = "Simulated failure requested with /fail.";
        self.send(SessionUpdate::AgentMessageChunk(
            ContentChunk::new(ContentBlock::from(message.to_owned())).meta(
                self.mb()
                    .with::<fields::TurnId>(self.turn_id.clone())
                    .with::<fields::Notice>(
                        NoticeMeta::new(NoticeLevel::Error, message).source("acp-ext serve"),
                    )
                    .build(),
            ),
        ));
        Err(Stop::Failed(Error::new(
            ErrorCode::INTERNAL_ERROR,
            "Turn failed: simulated failure requested with /fail",
        )))
    }
}
