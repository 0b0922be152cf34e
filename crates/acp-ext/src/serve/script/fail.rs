//! `/fail`: a notice on `session_info_update`, then a failed turn.

use super::*;

impl Turn {
    pub(super) fn fail(&mut self) -> Step {
        let message = "Simulated failure requested with /fail.";
        self.send(SessionUpdate::AgentMessageChunk(
            ContentChunk::new(ContentBlock::from(message.to_owned())).meta(
                self.mb()
                    .with::<fields::TurnId>(self.turn_id.clone())
                    .build(),
            ),
        ));
        // Notices ride on `session_info_update`, where clients read them.
        self.send(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().meta(
                self.mb()
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
