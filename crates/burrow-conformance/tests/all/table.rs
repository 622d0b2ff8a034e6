//! The table is complete: every `pub async fn` under `src/scenarios/` (sub-folders too) is listed in `SCENARIOS`, in the module it lives in, once; and the table is the pinned `scenarios.txt`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use burrow_conformance::{SCENARIOS, find};

/// (module, function) of every `pub async fn` in the scenario sources, sub-folders
/// included; the module is the first path component beneath `src/scenarios/`.
fn scenario_sources() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scenarios");
    let mut found = Vec::new();
    let mut pending = vec![dir.clone()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(&dir).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_str()
                .unwrap();
            let module = first.trim_end_matches(".rs").to_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                if let Some(rest) = line.trim_start().strip_prefix("pub async fn ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    found.push((module.clone(), name));
                }
            }
        }
    }
    found.sort();
    found
}

/// The names of the checked-in `scenarios.txt`.
fn pinned() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios.txt"))
        .unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_table_is_the_pinned_list() {
    let table: Vec<String> = SCENARIOS.iter().map(|s| s.name.to_owned()).collect();
    let mut a = table.clone();
    let mut b = pinned();
    a.sort();
    b.sort();
    assert_eq!(a, b, "SCENARIOS and scenarios.txt differ");
}

#[test]
fn removing_a_scenario_fails_check_table_naming_it() {
    // As if a scenario and its table line were deleted: the generated tests lack it,
    // and so does SCENARIOS; the pinned list still names it.
    let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    let removed = names[3];
    let generated: Vec<&str> = names.iter().copied().filter(|n| *n != removed).collect();
    let err = burrow_conformance::__private::check_table(&generated).unwrap_err();
    assert!(err.message().contains(removed), "{err}");
}

#[test]
fn every_scenario_function_is_in_the_table() {
    let sources = scenario_sources();
    assert!(
        sources.len() >= 80,
        "only {} scenario functions found",
        sources.len()
    );
    let mut missing = Vec::new();
    for (module, name) in &sources {
        match find(name) {
            Some(s) if s.module == module => {}
            Some(s) => missing.push(format!(
                "{module}::{name} is listed under module {}",
                s.module
            )),
            None => missing.push(format!(
                "{module}::{name} is not listed in __for_each_scenario!"
            )),
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    let in_sources: BTreeSet<&str> = sources.iter().map(|(_, n)| n.as_str()).collect();
    for s in SCENARIOS {
        assert!(
            in_sources.contains(s.name),
            "{} is listed but no `pub async fn` defines it",
            s.name
        );
    }
}

#[test]
fn names_are_unique_and_check_table_agrees() {
    let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "duplicate scenario names");
    burrow_conformance::__private::check_table(&names).unwrap();
    let err = burrow_conformance::__private::check_table(&names[1..]).unwrap_err();
    assert!(err.message().contains(names[0]), "{err}");
    let mut extra = names.clone();
    extra.push("not_a_scenario");
    let err = burrow_conformance::__private::check_table(&extra).unwrap_err();
    assert!(err.message().contains("not_a_scenario"), "{err}");
}

#[test]
fn every_topic_has_scenarios() {
    let mut per_module: BTreeMap<&str, usize> = BTreeMap::new();
    for s in SCENARIOS {
        *per_module.entry(s.module).or_default() += 1;
    }
    for topic in [
        "ls",
        "read",
        "write",
        "edit",
        "delete",
        "glob",
        "grep",
        "paths",
        "crlf",
        "content",
        "limits",
        "concurrency",
        "tenants",
        "replay",
        "sandbox",
        "host",
        "meta",
    ] {
        assert!(
            per_module.get(topic).copied().unwrap_or(0) > 0,
            "no scenario for {topic}"
        );
    }
}
