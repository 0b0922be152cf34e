//! corpus

use super::*;

fn corpus_dir() -> PathBuf {
    common::shared("corpus")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json" || e == "jsonl") {
            out.push(p);
        }
    }
}

/// Every `(field, value)` of a session-level `_meta.lody` object in `v`.
/// Capability objects (`agentCapabilities`, `clientCapabilities`, and the
/// protocol-v2 `capabilities`) use the same feature names for other shapes
/// and are skipped.
fn lody_meta(v: &Value, parent_key: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(obj) => {
            let in_capabilities = matches!(
                parent_key,
                "agentCapabilities" | "clientCapabilities" | "capabilities"
            );
            if !in_capabilities
                && let Some(lody) = obj.get("_meta").and_then(|m| m.get("lody"))
                && let Some(lody) = lody.as_object()
            {
                for (k, x) in lody {
                    out.push((k.clone(), x.clone()));
                }
            }
            for (k, x) in obj {
                lody_meta(x, k, out);
            }
        }
        Value::Array(items) => {
            for x in items {
                lody_meta(x, parent_key, out);
            }
        }
        _ => {}
    }
}

fn parses<T: DeserializeOwned + Check>(v: &Value) -> Result<(), String> {
    let violations = check::<T>(v);
    let parsed = serde_json::from_value::<T>(v.clone());
    match (violations.is_empty(), parsed) {
        (true, Ok(_)) => Ok(()),
        (false, Err(_)) => Err(format!("{violations:?}")),
        (a, b) => Err(format!(
            "check and serde disagree: check ok {a}, serde ok {}",
            b.is_ok()
        )),
    }
}

#[test]
fn corpus_session_meta_values_parse() {
    let dir = corpus_dir();
    let mut paths = Vec::new();
    files(&dir, &mut paths);
    assert!(!paths.is_empty());

    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut failures = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let mut found = Vec::new();
        for value in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
            let value = value.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            lody_meta(&value, "", &mut found);
        }
        for (field, v) in found {
            let result = match field.as_str() {
                // `goal` is opt|null in session metadata: null means "no goal".
                "goal" => parses::<Option<GoalSnapshot>>(&v),
                "notice" => parses::<NoticeMeta>(&v),
                "task" => parses::<TaskMeta>(&v),
                "activity" => parses::<ActivityMeta>(&v),
                "titleSource" => parses::<TitleSource>(&v),
                "messagePhase" => parses::<MessagePhase>(&v),
                "worktreeProject" => parses::<WorktreeProject>(&v),
                "sessionConfig" => parses::<SessionConfig>(&v),
                "forkAtTurn" => parses::<ForkAtTurn>(&v),
                "steer" => parses::<SteerPromptMeta>(&v),
                "goalControl" => parses::<GoalPromptControl>(&v),
                "turnId" => parses::<String>(&v),
                "toolName" => parses::<String>(&v).and_then(|()| {
                    if tool_names::ALL.contains(&v.as_str().unwrap_or_default()) {
                        Ok(())
                    } else {
                        Err(format!("{v} is not a contract tool name"))
                    }
                }),
                _ => continue,
            };
            *seen.entry(field.clone()).or_default() += 1;
            if let Err(e) = result {
                failures.push(format!("{}: {field} = {v}: {e}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The corpus exercises these fields; make sure the walk found them.
    for field in [
        "goal",
        "notice",
        "task",
        "activity",
        "titleSource",
        "messagePhase",
        "turnId",
        "toolName",
    ] {
        assert!(
            seen.get(field).copied().unwrap_or(0) > 0,
            "no {field} in corpus: {seen:?}"
        );
    }
}

/// `parses::<Option<T>>` needs `Option<T>: DeserializeOwned + Check`, and
/// `parses::<String>` needs `String: Check`; both come from the foundation.
#[test]
fn goal_meta_null_means_no_goal() {
    assert!(parses::<Option<GoalSnapshot>>(&json!(null)).is_ok());
    assert!(parses::<GoalSnapshot>(&json!(null)).is_err());
}
