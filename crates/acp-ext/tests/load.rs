//! Load on `acp-ext serve`: 1,000 sessions at once on one connection, in
//! process, with plain prompts, subagent streams and turns cancelled by
//! `session/cancel` or by `session/close`; then every session closed.
//!
//! The driver is the `serve_load` example (which also counts live heap
//! bytes with its global allocator, here too). Asserted: no message reaches
//! another session (session ids, turn ids, subagent run ids, usage scope
//! ids and prompt tokens all agree), every prompt ends with the expected
//! stop reason, no agent task outlives the sessions, and the heap returns to
//! its baseline: after closing, only the closed sessions' records remain
//! (kept for `session/load`), and after EOF nothing remains.

#[path = "../examples/serve_load.rs"]
#[allow(dead_code)]
mod serve_load;

const SESSIONS: usize = 1000;

#[test]
fn a_thousand_sessions_on_one_connection() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let r = runtime.block_on(serve_load::run(SESSIONS, 1));
    eprintln!("{r:#?}");
    assert!(
        r.violations.is_empty(),
        "{} violations, first: {:#?}",
        r.violations.len(),
        &r.violations[..r.violations.len().min(10)]
    );
    assert_eq!(r.sessions, SESSIONS);
    // Two prompts per session: a plain one, then the planned one (some
    // cancelled once started, some with the cancel right behind the prompt,
    // some by closing the session).
    assert_eq!(r.prompts, 2 * SESSIONS);
    let cancelled = (0..SESSIONS)
        .filter(|&i| serve_load::plan(i).cancelled())
        .count();
    assert_eq!(r.stop_reasons.get("cancelled"), Some(&cancelled));
    assert_eq!(
        r.stop_reasons.get("end_turn"),
        Some(&(2 * SESSIONS - cancelled))
    );
    let with_subagents = (0..SESSIONS)
        .filter(|&i| serve_load::plan(i) == serve_load::Plan::Subagents)
        .count();
    assert_eq!(r.runs, serve_load::CHILDREN * with_subagents);
    // Every turn and every session's usage scope was seen (so the routing
    // checks had something to check).
    assert_eq!(r.turns, r.prompts);
    assert_eq!(r.scopes, SESSIONS);
    assert_eq!(
        r.tasks_after_close, 0,
        "agent tasks outlived their sessions"
    );

    // While the sessions ran, the heap held them all.
    let during = r.live_peak - r.live_initialized;
    let kept = r.live_closed.saturating_sub(r.live_initialized);
    // Closed sessions keep a small record each (id, cwd, title, transcript);
    // their live state (usage ledger, runs, turn slot, tasks) is gone.
    assert!(
        kept < 4096 * SESSIONS,
        "{kept} bytes kept after closing {SESSIONS} sessions"
    );
    assert!(kept * 4 < during, "kept {kept} of a peak of {during} bytes");
    // After EOF the agent's state is gone entirely.
    assert!(
        r.live_after < r.live_before + (256 << 10),
        "{} live bytes after EOF, {} before the agent started",
        r.live_after,
        r.live_before
    );
}
