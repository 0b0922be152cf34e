//! tool names

use super::*;

#[test]
fn tool_names_are_the_contract_spellings() {
    assert_eq!(tool_names::IMAGE_GENERATION, "ImageGeneration");
    assert_eq!(tool_names::CRON_CREATE, "CronCreate");
    assert_eq!(tool_names::CRON_DELETE, "CronDelete");
    assert_eq!(tool_names::CRON_LIST, "CronList");
    assert_eq!(tool_names::SCHEDULE_WAKEUP, "ScheduleWakeup");
    assert_eq!(
        tool_names::ALL,
        [
            "ImageGeneration",
            "CronCreate",
            "CronDelete",
            "CronList",
            "ScheduleWakeup"
        ]
    );
}
