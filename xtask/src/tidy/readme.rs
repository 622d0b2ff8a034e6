//! The README's feature tables against Cargo.toml: each lists exactly its crate's features, and marks exactly its defaults.

use std::fs;
use std::path::Path;

use anyhow::Context;

use super::{Violation, violation};
use crate::ci::{CLI, FACADE};
use crate::manifest::Manifest;

/// The first header cell of the README table for each crate: `(header, crate folder)`.
pub const TABLES: &[(&str, &str)] = &[("facade feature", FACADE.1), ("CLI feature", CLI.1)];

/// Flags README.md when a feature table misses a feature of its crate, lists one the
/// crate does not have, or marks defaults other than the crate's `default`.
pub fn feature_tables(root: &Path, out: &mut Vec<Violation>) -> anyhow::Result<()> {
    let readme_path = root.join("README.md");
    let Ok(readme) = fs::read_to_string(&readme_path) else {
        return Ok(());
    };
    for (header, dir) in TABLES {
        let manifest_path = root.join("crates").join(dir).join("Cargo.toml");
        if !manifest_path.is_file() {
            continue;
        }
        let text = fs::read_to_string(&manifest_path)
            .with_context(|| format!("reading {}", manifest_path.display()))?;
        let manifest = Manifest::parse(&text);
        let package = manifest.package_name().unwrap_or(dir).to_string();
        let defaults = default_features(&manifest);
        for problem in table_problems(&readme, header, &package, &manifest.features(), &defaults) {
            out.push(violation(root, &readme_path, &problem));
        }
    }
    Ok(())
}

/// The names in `[features] default`.
fn default_features(manifest: &Manifest) -> Vec<String> {
    manifest
        .section("features")
        .and_then(|s| s.get("default"))
        .map(|list| {
            list.trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(|f| f.trim().trim_matches('"').to_string())
                .filter(|f| !f.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// What is wrong with the table whose first header cell is `header`, compared with
/// `package`'s `features` and `defaults`.
pub fn table_problems(
    readme: &str,
    header: &str,
    package: &str,
    features: &[String],
    defaults: &[String],
) -> Vec<String> {
    let Some(rows) = table_rows(readme, header) else {
        return vec![format!(
            "no feature table of {package} (a table whose first column is headed `{header}`)"
        )];
    };
    let mut problems = Vec::new();
    let listed: Vec<&str> = rows.iter().map(|(name, _)| name.as_str()).collect();
    let missing: Vec<&str> = features
        .iter()
        .map(String::as_str)
        .filter(|f| !listed.contains(f))
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "the `{header}` table misses {package}'s {}",
            quoted(&missing)
        ));
    }
    let extra: Vec<&str> = listed
        .iter()
        .copied()
        .filter(|l| !features.iter().any(|f| f == l))
        .collect();
    if !extra.is_empty() {
        problems.push(format!(
            "the `{header}` table lists {}, which {package} does not have",
            quoted(&extra)
        ));
    }
    let marked: Vec<&str> = rows
        .iter()
        .filter(|(_, default)| *default)
        .map(|(name, _)| name.as_str())
        .collect();
    let unmarked: Vec<&str> = defaults
        .iter()
        .map(String::as_str)
        .filter(|d| listed.contains(d) && !marked.contains(d))
        .collect();
    let wrongly: Vec<&str> = marked
        .iter()
        .copied()
        .filter(|m| !defaults.iter().any(|d| d == m))
        .collect();
    if !unmarked.is_empty() {
        problems.push(format!(
            "the `{header}` table does not mark {} `(default)`, which {package} turns on by default",
            quoted(&unmarked)
        ));
    }
    if !wrongly.is_empty() {
        problems.push(format!(
            "the `{header}` table marks {} `(default)`, which {package} does not turn on by default",
            quoted(&wrongly)
        ));
    }
    problems
}

/// The rows of the first table headed `header`: each row's feature name (the first
/// backticked word of its first cell) and whether the cell says `(default)`.
fn table_rows(readme: &str, header: &str) -> Option<Vec<(String, bool)>> {
    let mut lines = readme.lines().map(str::trim);
    lines.find(|l| first_cell(l).is_some_and(|c| c.eq_ignore_ascii_case(header)))?;
    let mut rows = Vec::new();
    for line in lines {
        let Some(cell) = first_cell(line) else {
            break;
        };
        if cell.chars().all(|c| c == '-' || c == ':' || c == ' ') {
            continue;
        }
        let name = cell.split('`').nth(1).unwrap_or(cell).trim().to_string();
        rows.push((name, cell.contains("(default)")));
    }
    Some(rows)
}

/// The first cell of a Markdown table row, trimmed; `None` when the line is no row.
fn first_cell(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('|')?;
    rest.split('|').next().map(str::trim)
}

fn quoted(names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::table_problems;

    const README: &str = "\
# x

| facade feature | crate it adds |
| --- | --- |
| `state` (default) | burrow-state |
| `fs` (default) | burrow-fs |
| `sqlite` | burrow-sqlite |

text

| CLI feature | what it turns on |
| --- | --- |
| `run` (default) | `burrow run` |
";

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_table_that_matches_its_manifest_has_no_problem() {
        let problems = table_problems(
            README,
            "facade feature",
            "burrow-agent",
            &strings(&["state", "fs", "sqlite"]),
            &strings(&["state", "fs"]),
        );
        assert_eq!(problems, Vec::<String>::new());
        let problems = table_problems(
            README,
            "CLI feature",
            "burrow-agent-cli",
            &strings(&["run"]),
            &strings(&["run"]),
        );
        assert_eq!(problems, Vec::<String>::new());
    }

    #[test]
    fn a_missing_an_extra_and_a_wrongly_marked_feature_are_each_named() {
        let problems = table_problems(
            README,
            "facade feature",
            "burrow-agent",
            &strings(&["state", "fs", "otel"]),
            &strings(&["state", "otel"]),
        );
        assert_eq!(
            problems,
            vec![
                "the `facade feature` table misses burrow-agent's `otel`",
                "the `facade feature` table lists `sqlite`, which burrow-agent does not have",
                "the `facade feature` table marks `fs` `(default)`, which burrow-agent does not \
                 turn on by default",
            ]
        );
        let problems = table_problems(
            README,
            "facade feature",
            "burrow-agent",
            &strings(&["state", "fs", "sqlite"]),
            &strings(&["state", "fs", "sqlite"]),
        );
        assert_eq!(
            problems,
            vec![
                "the `facade feature` table does not mark `sqlite` `(default)`, which \
                 burrow-agent turns on by default"
            ]
        );
    }

    #[test]
    fn a_readme_without_the_table_says_so() {
        let problems = table_problems("# x\n", "CLI feature", "burrow-agent-cli", &[], &[]);
        assert_eq!(
            problems,
            vec![
                "no feature table of burrow-agent-cli (a table whose first column is headed \
                 `CLI feature`)"
            ]
        );
    }
}
