//! Golden JSON for every wire type: `tests/fixtures/types/<Type>.json` holds cases
//! `{"input": ..., "output"?: ..., "rejected"?: "why"}`; each must deserialise and
//! serialise to `output` (or back to `input`), or be refused when `rejected`.
//! The cases for the Python library's own types are written by it (make_fixtures.py).

use std::collections::BTreeSet;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::support::{fixture, read_fixture};

type Check = fn(&Value) -> Result<(), String>;

macro_rules! registry {
    ($($ty:ident),* $(,)?) => {
        &[$((stringify!($ty), check::<burrow_types::$ty> as Check)),*]
    };
}

/// Every wire type of burrow-types, by the name of its fixture file.
const TYPES: &[(&str, Check)] = registry![
    Checkpoint,
    CompiledSubAgent,
    ContextFile,
    EditResult,
    ExecuteResponse,
    ExecutionMode,
    FileData,
    FileInfo,
    GrepMatch,
    Hook,
    HookEvent,
    MemoryFile,
    OutputStyle,
    PackageManager,
    RuntimeConfig,
    SharedTodoItem,
    Skill,
    SkillDirectory,
    SkillFrontmatter,
    SubAgentConfig,
    TaskComplexity,
    TaskHandle,
    TaskPriority,
    TaskStatus,
    TeamMember,
    TeamMessage,
    Todo,
    TodoStatus,
    UploadedFile,
    WriteResult,
];

fn check<T: Serialize + DeserializeOwned>(case: &Value) -> Result<(), String> {
    let input = case.get("input").ok_or("a case has no \"input\"")?;
    let parsed = serde_json::from_value::<T>(input.clone());
    if let Some(why) = case.get("rejected") {
        return match parsed {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("accepted {input} although {why}")),
        };
    }
    let value = parsed.map_err(|e| format!("refused {input}: {e}"))?;
    let written = serde_json::to_value(&value).map_err(|e| e.to_string())?;
    let want = case.get("output").unwrap_or(input);
    if &written != want {
        return Err(format!("{input}\n  wrote {written}\n  want  {want}"));
    }
    // The full form is a fixed point.
    let again = serde_json::from_value::<T>(written.clone()).map_err(|e| e.to_string())?;
    let rewritten = serde_json::to_value(&again).map_err(|e| e.to_string())?;
    if rewritten != written {
        return Err(format!("{written} is not a fixed point: {rewritten}"));
    }
    Ok(())
}

#[test]
fn every_type_has_a_fixture_and_every_fixture_a_type() {
    let dir = fixture("types");
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    let types: BTreeSet<String> = TYPES.iter().map(|(name, _)| (*name).to_owned()).collect();
    assert_eq!(files, types);
}

#[test]
fn every_golden_case_round_trips() {
    let mut failures = Vec::new();
    let mut cases = 0;
    for (name, check) in TYPES {
        let text = read_fixture(&format!("types/{name}.json"));
        let list: Vec<Value> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("types/{name}.json: {e}"));
        assert!(!list.is_empty(), "types/{name}.json has no case");
        for (index, case) in list.iter().enumerate() {
            cases += 1;
            if let Err(why) = check(case) {
                failures.push(format!("{name}[{index}]: {why}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
