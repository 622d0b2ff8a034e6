//! CHANGELOG.md in the Keep a Changelog form: reading it, and `cargo xtask changelog`.
//!
//! The form (<https://keepachangelog.com/en/1.1.0/>): `# Changelog`, then `## [Unreleased]`,
//! then one `## [X.Y.Z] - YYYY-MM-DD` per release, newest first, each with `### Added`,
//! `### Changed`, `### Deprecated`, `### Removed`, `### Fixed` or `### Security`
//! subsections of `- ` entries. `cargo xtask changelog` checks the form and that the
//! Unreleased section is not empty when code under `crates/` changed since the last
//! release's tag (`vX.Y.Z`), or ever, before the first release.

use std::fs;
use std::path::Path;

use crate::cmd::Cmd;

/// The file, at the workspace root.
pub const FILE: &str = "CHANGELOG.md";

/// Keep a Changelog's kinds of change.
const KINDS: &[&str] = &[
    "Added",
    "Changed",
    "Deprecated",
    "Removed",
    "Fixed",
    "Security",
];

/// One released version's section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub version: String,
    pub date: String,
    /// Its `- ` entries, without the dash.
    pub entries: Vec<String>,
}

/// A parsed changelog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changelog {
    /// The `- ` entries of `## [Unreleased]`.
    pub unreleased: Vec<String>,
    /// Released versions, in file order (newest first).
    pub releases: Vec<Release>,
}

impl Changelog {
    /// The released section for `version`, if there is one.
    pub fn release(&self, version: &str) -> Option<&Release> {
        self.releases.iter().find(|r| r.version == version)
    }
}

/// Reads a changelog, or says in one line (with its line number) what breaks the form.
pub fn parse(text: &str) -> Result<Changelog, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    match lines.next() {
        Some((_, l)) if l.trim() == "# Changelog" => {}
        _ => return Err(format!("{FILE}: the first line must be `# Changelog`")),
    }
    let mut unreleased: Option<Vec<String>> = None;
    let mut releases: Vec<Release> = Vec::new();
    // Which section entries go to: None before the first `##`.
    let mut in_release: Option<bool> = None;
    for (i, line) in lines {
        let n = i + 1;
        let line = line.trim_end();
        if let Some(title) = line.strip_prefix("## ") {
            let title = title.trim();
            if title == "[Unreleased]" {
                if unreleased.is_some() || !releases.is_empty() {
                    return Err(format!(
                        "{FILE} line {n}: `## [Unreleased]` must come once, before every release"
                    ));
                }
                unreleased = Some(Vec::new());
                in_release = Some(false);
            } else {
                let release = release_heading(title).ok_or_else(|| {
                    format!(
                        "{FILE} line {n}: `## {title}` is neither `## [Unreleased]` nor \
                         `## [X.Y.Z] - YYYY-MM-DD`"
                    )
                })?;
                if releases.iter().any(|r| r.version == release.version) {
                    return Err(format!(
                        "{FILE} line {n}: version {} has a second section",
                        release.version
                    ));
                }
                releases.push(release);
                in_release = Some(true);
            }
        } else if let Some(kind) = line.strip_prefix("### ") {
            if !KINDS.contains(&kind.trim()) {
                return Err(format!(
                    "{FILE} line {n}: `### {}` is not one of {}",
                    kind.trim(),
                    KINDS.join(", ")
                ));
            }
            if in_release.is_none() {
                return Err(format!(
                    "{FILE} line {n}: `### {}` before any `##` section",
                    kind.trim()
                ));
            }
        } else if let Some(entry) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
            let entry = entry.trim().to_string();
            match in_release {
                Some(false) => {
                    if let Some(u) = unreleased.as_mut() {
                        u.push(entry);
                    }
                }
                Some(true) => {
                    if let Some(r) = releases.last_mut() {
                        r.entries.push(entry);
                    }
                }
                None => {
                    return Err(format!("{FILE} line {n}: an entry before any `##` section"));
                }
            }
        }
    }
    match unreleased {
        Some(unreleased) => Ok(Changelog {
            unreleased,
            releases,
        }),
        None => Err(format!("{FILE}: no `## [Unreleased]` section")),
    }
}

/// `[X.Y.Z] - YYYY-MM-DD`.
fn release_heading(title: &str) -> Option<Release> {
    let (version, date) = title.split_once(" - ")?;
    let version = version.trim().strip_prefix('[')?.strip_suffix(']')?;
    crate::release::not_a_version(version)
        .is_none()
        .then_some(())?;
    let date = date.trim();
    let d: Vec<&str> = date.split('-').collect();
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let ok = d.len() == 3 && digits(d[0], 4) && digits(d[1], 2) && digits(d[2], 2);
    ok.then(|| Release {
        version: version.to_string(),
        date: date.to_string(),
        entries: Vec::new(),
    })
}

/// Reads and parses the workspace's changelog.
pub fn read(root: &Path) -> Result<Changelog, String> {
    let text = fs::read_to_string(root.join(FILE))
        .map_err(|err| format!("{FILE} cannot be read: {err}"))?;
    parse(&text)
}

/// Whether code changed since the last release, and the sentence saying against what.
fn code_changed(root: &Path, log: &Changelog) -> (bool, String) {
    let Some(last) = log.releases.first() else {
        return (
            true,
            "nothing is released yet, so all of crates/ is new".into(),
        );
    };
    let tag = format!("v{}", last.version);
    let tag_exists =
        Cmd::new(root, "git", &["rev-parse", "--verify", "--quiet", &tag]).succeeds_quietly();
    if !tag_exists {
        return (
            true,
            format!(
                "the last release, {}, has no tag {tag} to compare with",
                last.version
            ),
        );
    }
    let range = format!("{tag}..HEAD");
    let same =
        Cmd::new(root, "git", &["diff", "--quiet", &range, "--", "crates"]).succeeds_quietly();
    if same {
        (false, format!("crates/ is unchanged since {tag}"))
    } else {
        (true, format!("crates/ changed since {tag}"))
    }
}

/// `cargo xtask changelog`: the form, and a non-empty Unreleased section when code
/// changed.
pub fn run(root: &Path) -> anyhow::Result<bool> {
    let log = match read(root) {
        Ok(log) => log,
        Err(refusal) => {
            println!("changelog: {refusal}");
            return Ok(false);
        }
    };
    let (changed, why) = code_changed(root, &log);
    if changed && log.unreleased.is_empty() {
        println!(
            "changelog: {why}, but the [Unreleased] section of {FILE} lists nothing: add an \
             entry under `### Added`, `### Changed` or `### Fixed`"
        );
        return Ok(false);
    }
    println!(
        "changelog: {FILE} is in the Keep a Changelog form; {why}; [Unreleased] has {} entries",
        log.unreleased.len()
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Changelog\n\nAll notable changes.\n\n## [Unreleased]\n\n### Added\n\n\
                        - a thing\n- another\n\n## [0.1.0] - 2026-12-01\n\n### Fixed\n\n- a bug\n\n\
                        [Unreleased]: https://github.com/burrow-rs/burrow/compare/v0.1.0...HEAD\n";

    #[test]
    fn reads_unreleased_and_releases() {
        let log = parse(GOOD).unwrap();
        assert_eq!(log.unreleased, vec!["a thing", "another"]);
        assert_eq!(
            log.releases,
            vec![Release {
                version: "0.1.0".into(),
                date: "2026-12-01".into(),
                entries: vec!["a bug".into()],
            }]
        );
        assert!(log.release("0.1.0").is_some());
        assert!(log.release("0.2.0").is_none());
    }

    #[test]
    fn refuses_what_breaks_the_form_in_one_line() {
        assert_eq!(
            parse("# Changes\n").unwrap_err(),
            "CHANGELOG.md: the first line must be `# Changelog`"
        );
        assert_eq!(
            parse("# Changelog\n\n## [0.1.0] - 2026-12-01\n").unwrap_err(),
            "CHANGELOG.md: no `## [Unreleased]` section"
        );
        assert_eq!(
            parse("# Changelog\n## [Unreleased]\n## 0.1.0\n").unwrap_err(),
            "CHANGELOG.md line 3: `## 0.1.0` is neither `## [Unreleased]` nor `## [X.Y.Z] - YYYY-MM-DD`"
        );
        assert_eq!(
            parse("# Changelog\n## [Unreleased]\n### Improved\n").unwrap_err(),
            "CHANGELOG.md line 3: `### Improved` is not one of Added, Changed, Deprecated, Removed, Fixed, Security"
        );
        assert_eq!(
            parse("# Changelog\n## [0.1.0] - 2026-12-01\n## [Unreleased]\n").unwrap_err(),
            "CHANGELOG.md line 3: `## [Unreleased]` must come once, before every release"
        );
    }

    #[test]
    fn the_repository_changelog_is_in_form_and_not_empty() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let log = read(&root).unwrap();
        assert!(!log.unreleased.is_empty() || !log.releases.is_empty());
    }
}
