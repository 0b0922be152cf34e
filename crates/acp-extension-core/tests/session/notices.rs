//! notices, titles, phases

use super::*;

#[test]
fn notice_round_trips_and_rejections() {
    let n: NoticeMeta =
        round_trip(json!({"level": "warning", "message": "", "source": "configWarning"}));
    assert_eq!(n.level, NoticeLevel::Warning);
    round_trip::<NoticeMeta>(json!({"level": "info", "message": "m"}));
    round_trip::<NoticeMeta>(json!({"level": "error", "message": " \n "}));
    rejects::<NoticeMeta>(
        json!({"level": "debug", "message": "m"}),
        &[("/level", "one-of")],
    );
    rejects::<NoticeMeta>(
        json!({"level": "info", "message": "m", "source": null}),
        &[("/source", "not-null")],
    );
    rejects::<NoticeMeta>(json!({"level": "info"}), &[("/message", "required")]);
}

#[test]
fn title_source_and_message_phase() {
    for (s, authoritative) in [
        ("explicit", true),
        ("generated", true),
        ("fallback", false),
        ("unset", false),
    ] {
        let t: TitleSource = round_trip(json!(s));
        assert_eq!(t.is_authoritative(), authoritative, "{s}");
    }
    rejects::<TitleSource>(json!("manual"), &[("", "one-of")]);
    rejects::<TitleSource>(json!(null), &[("", "one-of")]);

    assert_eq!(
        round_trip::<MessagePhase>(json!("commentary")),
        MessagePhase::Commentary
    );
    assert_eq!(
        round_trip::<MessagePhase>(json!("final_answer")),
        MessagePhase::FinalAnswer
    );
    rejects::<MessagePhase>(json!("final"), &[("", "one-of")]);
}
