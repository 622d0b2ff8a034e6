//! Just enough TOML reading for Cargo.toml files: sections and their `key = value` lines.
//!
//! xtask keeps its dependencies to anyhow and std, so it does not pull in a TOML parser.
//! The house manifests are simple (one key per line, arrays possibly spanning lines),
//! and that is all this reader understands.

/// One `[header]` or `[[header]]` section with its entries in file order.
#[derive(Debug, Default)]
pub struct Section {
    /// The header without brackets and spaces, e.g. `package`, `lints`,
    /// `target.'cfg(unix)'.dependencies`; empty for the keys before any header.
    pub header: String,
    /// True for an array-of-tables header (`[[bench]]`).
    pub is_array: bool,
    /// `(key, value)` pairs, whitespace trimmed, comments removed, a value spanning
    /// lines joined with spaces.
    pub entries: Vec<(String, String)>,
}

impl Section {
    /// The value of `key` in this section.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `key` as a plain string (`name = "x"` gives `x`).
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).map(unquote)
    }
}

/// A parsed manifest.
#[derive(Debug)]
pub struct Manifest {
    pub sections: Vec<Section>,
}

impl Manifest {
    pub fn parse(text: &str) -> Manifest {
        let mut sections = vec![Section::default()];
        let mut pending: Option<(String, String)> = None;
        for raw in text.lines() {
            let line = strip_comment(raw).trim();
            if let Some((key, value)) = pending.as_mut() {
                value.push(' ');
                value.push_str(line);
                if balanced(value) {
                    let entry = (
                        std::mem::take(key),
                        std::mem::take(value).trim().to_string(),
                    );
                    push_entry(&mut sections, entry);
                    pending = None;
                }
                continue;
            }
            if line.is_empty() {
                continue;
            }
            if let Some(header) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
                sections.push(Section {
                    header: normalize_key(header),
                    is_array: true,
                    entries: Vec::new(),
                });
            } else if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                sections.push(Section {
                    header: normalize_key(header),
                    is_array: false,
                    entries: Vec::new(),
                });
            } else if let Some(eq) = find_unquoted(line, '=') {
                let key = normalize_key(&line[..eq]);
                let value = line[eq + 1..].trim().to_string();
                if balanced(&value) {
                    push_entry(&mut sections, (key, value));
                } else {
                    pending = Some((key, value));
                }
            }
        }
        Manifest { sections }
    }

    /// The first (non-array) section with this header.
    pub fn section(&self, header: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| !s.is_array && s.header == header)
    }

    /// Every section with this header (e.g. all `[[test]]` sections).
    pub fn sections_named<'a>(&'a self, header: &'a str) -> impl Iterator<Item = &'a Section> {
        self.sections.iter().filter(move |s| s.header == header)
    }

    /// The package name from `[package] name`.
    pub fn package_name(&self) -> Option<&str> {
        self.section("package").and_then(|s| s.get_str("name"))
    }

    /// The feature names of `[features]`, in file order, `default` excluded.
    pub fn features(&self) -> Vec<String> {
        self.section("features")
            .map(|s| {
                s.entries
                    .iter()
                    .map(|(k, _)| unquote(k).to_string())
                    .filter(|k| k != "default")
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// True when `key` is inherited from the workspace in `section`: either
/// `key.workspace = true` or `key = { workspace = true }`.
pub fn inherits(section: &Section, key: &str) -> bool {
    if section.get(&format!("{key}.workspace")) == Some("true") {
        return true;
    }
    match section.get(key) {
        Some(value) => {
            let compact: String = value.chars().filter(|c| !c.is_whitespace()).collect();
            compact == "{workspace=true}"
        }
        None => false,
    }
}

fn push_entry(sections: &mut [Section], entry: (String, String)) {
    if let Some(section) = sections.last_mut() {
        section.entries.push(entry);
    }
}

/// Removes spaces around the dots of a dotted key or header (`a . b` -> `a.b`).
fn normalize_key(key: &str) -> String {
    let mut out = String::new();
    let mut in_quote: Option<char> = None;
    for c in key.trim().chars() {
        match in_quote {
            Some(q) if c == q => in_quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => in_quote = Some(c),
            None if c.is_whitespace() => continue,
            None => {}
        }
        out.push(c);
    }
    out
}

fn unquote(value: &str) -> &str {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

/// The line up to a `#` that is not inside a string.
fn strip_comment(line: &str) -> &str {
    match find_unquoted(line, '#') {
        Some(i) => &line[..i],
        None => line,
    }
}

/// The byte index of the first `needle` outside '...' and "..." strings.
fn find_unquoted(line: &str, needle: char) -> Option<usize> {
    let mut in_quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match in_quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => in_quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => in_quote = Some(c),
            None if c == needle => return Some(i),
            None => {}
        }
    }
    None
}

/// True when every `[` and `{` outside strings is closed.
fn balanced(value: &str) -> bool {
    let mut depth: i64 = 0;
    let mut in_quote: Option<char> = None;
    let mut escaped = false;
    for c in value.chars() {
        match in_quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => in_quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => in_quote = Some(c),
                '[' | '{' => depth += 1,
                ']' | '}' => depth -= 1,
                _ => {}
            },
        }
    }
    depth <= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
[package]
name = "burrow" # the facade
version.workspace = true
edition = { workspace = true }

[features]
default = ["state", "fs"]
state = ["dep:burrow-state"]
full = [
    "state", # comment inside
    "fs",
]
"object-store" = []

[[bench]]
name = "state"
harness = false

[target . 'cfg(unix)' . dependencies]
anyhow = "1"
"#;

    #[test]
    fn reads_sections_entries_and_multiline_arrays() {
        let m = Manifest::parse(SAMPLE);
        assert_eq!(m.package_name(), Some("burrow"));
        assert_eq!(m.features(), vec!["state", "full", "object-store"]);
        let features = m.section("features").unwrap();
        assert_eq!(features.get("full"), Some(r#"[ "state", "fs", ]"#));
        let benches: Vec<_> = m.sections_named("bench").collect();
        assert_eq!(benches.len(), 1);
        assert!(benches[0].is_array);
        assert_eq!(benches[0].get_str("name"), Some("state"));
        let unix = m.section("target.'cfg(unix)'.dependencies").unwrap();
        assert_eq!(unix.get("anyhow"), Some("\"1\""));
    }

    #[test]
    fn inheritance_in_both_spellings() {
        let m = Manifest::parse(SAMPLE);
        let package = m.section("package").unwrap();
        assert!(inherits(package, "version"));
        assert!(inherits(package, "edition"));
        assert!(!inherits(package, "license"));
        assert!(!inherits(package, "name"));
    }

    #[test]
    fn hash_and_equals_inside_strings_are_not_syntax() {
        let m = Manifest::parse("[package]\ndescription = \"a # b = c\" # real comment\n");
        let package = m.section("package").unwrap();
        assert_eq!(package.get_str("description"), Some("a # b = c"));
    }
}
