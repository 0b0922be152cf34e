//! One root session's subagent runs, shared by every emitter the handle
//! gives out for it.

use super::*;

/// One root session's subagent runs, as [`AgentExtensions::subagent_emitter`]
/// hands them out: every call (and every clone) shares the same runs, so
/// events for a run go to the run id its `start` issued. An event for a
/// native id without a live run is [`SendError::UnknownRun`], never
/// dropped silently; `start` of a run that is already live sends nothing.
#[derive(Clone)]
pub struct SessionRuns {
    pub(super) emitter: Arc<futures::lock::Mutex<SubagentEmitter<HandleSink>>>,
}

/// The sink of the handle's own emitters: every event through
/// [`AgentExtensions::subagent_event`].
pub(super) struct HandleSink(pub(super) AgentExtensions);

impl EventSink for HandleSink {
    type Error = SendError;
    fn send(
        &mut self,
        event: EmittedEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let result = event
            .to_typed()
            .map_err(SendError::InvalidEvent)
            .and_then(|e| self.0.subagent_event(e))
            .map(|_| ());
        std::future::ready(result)
    }
}

impl std::fmt::Debug for SessionRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRuns").finish_non_exhaustive()
    }
}

impl SessionRuns {
    async fn live_or_unknown(
        &self,
        native_id: &str,
    ) -> Result<futures::lock::MutexGuard<'_, SubagentEmitter<HandleSink>>, SendError> {
        let emitter = self.emitter.lock().await;
        if emitter.live(native_id) {
            Ok(emitter)
        } else {
            Err(SendError::UnknownRun(native_id.to_owned()))
        }
    }

    /// Starts a run of `native_id` with `snapshot` and sends it (nothing
    /// when that native id has a live run).
    pub async fn start(
        &self,
        native_id: impl Into<String>,
        snapshot: SubagentSnapshot,
    ) -> Result<(), SendError> {
        self.emitter.lock().await.start(native_id, snapshot).await
    }

    /// Patches the live run of `native_id` and sends its full snapshot.
    pub async fn snapshot(&self, native_id: &str, patch: SnapshotPatch) -> Result<(), SendError> {
        self.live_or_unknown(native_id)
            .await?
            .snapshot(native_id, patch)
            .await
    }

    /// Sends progress for the live run of `native_id`.
    pub async fn progress(
        &self,
        native_id: &str,
        progress: SubagentProgress,
    ) -> Result<(), SendError> {
        self.live_or_unknown(native_id)
            .await?
            .progress(native_id, progress)
            .await
    }

    /// Sends one output update for the live run of `native_id`.
    pub async fn output(
        &self,
        native_id: &str,
        update: SubagentOutput,
        ids: OutputIds,
    ) -> Result<(), SendError> {
        self.live_or_unknown(native_id)
            .await?
            .output(native_id, update, ids)
            .await
    }

    /// Like [`SessionRuns::output`] for an untyped update (an invalid one
    /// marks the run's output incomplete instead, as the emitter does).
    pub async fn output_value(
        &self,
        native_id: &str,
        update: Value,
        ids: OutputIds,
    ) -> Result<(), SendError> {
        self.live_or_unknown(native_id)
            .await?
            .output_value(native_id, update, ids)
            .await
    }

    /// Marks every live run lost (`unknown`, `disconnected`).
    pub async fn disconnect(&self) -> Result<(), SendError> {
        self.emitter.lock().await.disconnect().await
    }

    /// Whether `native_id` has a live run.
    pub async fn live(&self, native_id: &str) -> bool {
        self.emitter.lock().await.live(native_id)
    }
}
