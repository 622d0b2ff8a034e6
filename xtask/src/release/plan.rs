//! The release planner: the publish order and the per-crate checks, from `cargo metadata`.
//!
//! Pure over a [`Workspace`] (read from `cargo metadata --no-deps` JSON), so the order
//! and every refusal are unit-tested on small synthetic workspaces. Nothing here runs a
//! command. Every problem is one line naming the crate, and all of them are reported at
//! once so a maintainer fixes them in one go.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::Context;
use serde_json::Value;

/// The crates' layers (docs/ARCHITECTURE.md), lowest first, as `(crate, layer)`: the expected order the
/// graph must agree with. Crates not listed (a new backend, a new adapter) get the layer
/// above the highest of their dependencies, so they need no entry here.
const LAYERS: &[(&str, u32)] = &[
    ("burrow-types", 0),
    ("burrow-backend", 1),
    // 2: each backend (burrow-state, burrow-fs, ...): computed.
    ("burrow-conformance", 3),
    ("burrow-composite", 4),
    ("burrow-runtime", 5),
    ("burrow-models", 6),
    ("burrow-agent", 7),
    ("burrow-agent-cli", 8),
];

/// The layers' names, for messages.
const LAYER_NAMES: &[&str] = &[
    "types",
    "backend",
    "each backend",
    "conformance",
    "composite",
    "runtime",
    "models",
    "facade",
    "cli",
];

/// How a dependency is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Normal,
    Build,
    Dev,
}

/// One dependency of a package, as `cargo metadata` lists it.
#[derive(Debug, Clone)]
pub struct Dep {
    /// The package depended on (not its rename).
    pub name: String,
    pub kind: Kind,
    /// The version requirement; `*` when none was written (a path-only dependency).
    pub req: String,
    /// The registry or git source; `None` for a path dependency.
    pub source: Option<String>,
}

impl Dep {
    /// True when the dependency names a version, so publishing keeps it.
    fn has_version(&self) -> bool {
        self.req != "*"
    }
}

/// What `[package.metadata.docs.rs]` asks docs.rs to build.
#[derive(Debug, Clone, Default)]
pub struct DocsRs {
    pub all_features: bool,
    pub features: Vec<String>,
}

/// One workspace member, with the fields the release checks.
#[derive(Debug, Clone, Default)]
pub struct Package {
    pub name: String,
    pub version: String,
    /// False for `publish = false`.
    pub publish: bool,
    /// The folder holding its Cargo.toml.
    pub dir: PathBuf,
    pub license: Option<String>,
    pub license_file: Option<String>,
    pub description: Option<String>,
    pub repository: Option<String>,
    pub readme: Option<String>,
    pub keywords: Vec<String>,
    pub categories: Vec<String>,
    pub rust_version: Option<String>,
    /// Feature names, `default` excluded.
    pub features: Vec<String>,
    pub docs_rs: Option<DocsRs>,
    pub deps: Vec<Dep>,
}

/// The workspace members.
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    pub packages: Vec<Package>,
}

impl Workspace {
    /// Reads `cargo metadata --format-version 1 --no-deps` output.
    pub fn from_metadata(json: &str) -> anyhow::Result<Workspace> {
        let value: Value = serde_json::from_str(json).context("cargo metadata printed no JSON")?;
        let members: BTreeSet<&str> = value["workspace_members"]
            .as_array()
            .context("cargo metadata: no workspace_members")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut packages = Vec::new();
        for p in value["packages"]
            .as_array()
            .context("cargo metadata: no packages")?
        {
            if !p["id"].as_str().is_some_and(|id| members.contains(id)) {
                continue;
            }
            packages.push(package_from_json(p)?);
        }
        packages.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Workspace { packages })
    }

    fn get(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }
}

fn package_from_json(p: &Value) -> anyhow::Result<Package> {
    let text = |key: &str| {
        p[key]
            .as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let name = text("name").context("cargo metadata: a package without a name")?;
    let manifest = text("manifest_path").with_context(|| format!("{name}: no manifest_path"))?;
    let dir = PathBuf::from(manifest)
        .parent()
        .map(PathBuf::from)
        .with_context(|| format!("{name}: manifest_path has no folder"))?;
    // `publish`: null means any registry, [] means `publish = false`.
    let publish = match &p["publish"] {
        Value::Array(registries) => !registries.is_empty(),
        _ => true,
    };
    let mut features: Vec<String> = p["features"]
        .as_object()
        .map(|f| f.keys().filter(|k| *k != "default").cloned().collect())
        .unwrap_or_default();
    features.sort();
    let docs_rs = p["metadata"]["docs"]["rs"].as_object().map(|d| DocsRs {
        all_features: d.get("all-features").and_then(Value::as_bool) == Some(true),
        features: d.get("features").map(list).unwrap_or_default(),
    });
    let mut deps = Vec::new();
    for d in p["dependencies"].as_array().into_iter().flatten() {
        let kind = match d["kind"].as_str() {
            Some("dev") => Kind::Dev,
            Some("build") => Kind::Build,
            _ => Kind::Normal,
        };
        deps.push(Dep {
            name: d["name"].as_str().unwrap_or_default().to_string(),
            kind,
            req: d["req"].as_str().unwrap_or("*").to_string(),
            source: d["source"].as_str().map(String::from),
        });
    }
    Ok(Package {
        version: text("version").unwrap_or_default(),
        publish,
        dir,
        license: text("license"),
        license_file: text("license_file"),
        description: text("description"),
        repository: text("repository"),
        readme: text("readme"),
        keywords: list(&p["keywords"]),
        categories: list(&p["categories"]),
        rust_version: text("rust_version"),
        features,
        docs_rs,
        deps,
        name,
    })
}

/// What will be published, in which order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The one version every published crate carries.
    pub version: String,
    /// The publishable crates, in publish order (each after what it needs).
    pub order: Vec<String>,
    /// Each publishable crate's publishable workspace dependencies that order it.
    pub needs: BTreeMap<String, Vec<String>>,
    /// Crates that are never published (`publish = false`).
    pub unpublished: Vec<String>,
    /// The `rust-version` the crates declare.
    pub rust_version: String,
    /// The `repository` the crates declare.
    pub repository: String,
}

/// The plan for releasing `ws` at `version` (the crates' own version when `None`), or
/// every reason it cannot be released, one line each.
pub fn plan(ws: &Workspace, version: Option<&str>) -> Result<Plan, Vec<String>> {
    let mut refusals = Vec::new();
    let mut publishable: Vec<&Package> = ws.packages.iter().filter(|p| p.publish).collect();
    publishable.sort_by(|a, b| a.name.cmp(&b.name));
    let unpublished: Vec<String> = ws
        .packages
        .iter()
        .filter(|p| !p.publish)
        .map(|p| p.name.clone())
        .collect();
    if publishable.is_empty() {
        return Err(vec![
            "no crate is publishable: every crate says `publish = false`".into(),
        ]);
    }
    let version = match version {
        Some(v) => v.to_string(),
        None => most_common(publishable.iter().map(|p| p.version.as_str())),
    };
    if let Some(bad) = not_a_version(&version) {
        refusals.push(bad);
    }
    let rust_version = most_common(publishable.iter().filter_map(|p| p.rust_version.as_deref()));
    for p in &publishable {
        check_package(p, &version, &rust_version, &mut refusals);
        check_deps(ws, p, &version, &mut refusals);
    }
    let order = match order(ws) {
        Ok(order) => order,
        Err(mut problems) => {
            refusals.append(&mut problems);
            Vec::new()
        }
    };
    if !refusals.is_empty() {
        return Err(refusals);
    }
    let needs = publishable
        .iter()
        .map(|p| {
            let mut needs: Vec<String> = ordering_edges(ws, p)
                .into_iter()
                .map(|(d, _)| d.to_string())
                .collect();
            needs.sort();
            needs.dedup();
            (p.name.clone(), needs)
        })
        .collect();
    let repository = most_common(publishable.iter().filter_map(|p| p.repository.as_deref()));
    Ok(Plan {
        version,
        order,
        needs,
        unpublished,
        rust_version,
        repository,
    })
}

/// The value most of `values` have (the alphabetically first on a tie); empty for none.
fn most_common<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let mut best: Option<(&str, usize)> = None;
    for (v, n) in counts {
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((v, n));
        }
    }
    best.map(|(v, _)| v.to_string()).unwrap_or_default()
}

/// A refusal when `v` is not `X.Y.Z` (optionally `-pre`).
pub fn not_a_version(v: &str) -> Option<String> {
    let core = v.split_once('-').map_or(v, |(core, _)| core);
    let parts: Vec<&str> = core.split('.').collect();
    let ok = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (!ok).then(|| format!("`{v}` is not a version of the form X.Y.Z"))
}

fn check_package(p: &Package, version: &str, rust_version: &str, out: &mut Vec<String>) {
    let c = &p.name;
    if p.version != version {
        out.push(format!(
            "{c} is at version {}, but the release is {version}: every published crate carries \
             the one version (set [workspace.package] version and the versions in \
             [workspace.dependencies])",
            p.version
        ));
    }
    if p.license.is_none() && p.license_file.is_none() {
        out.push(format!(
            "{c}: no `license` in [package]: crates.io refuses a crate without one \
             (add `license.workspace = true`)"
        ));
    }
    if p.description.is_none() {
        out.push(format!(
            "{c}: no `description` in [package]: crates.io refuses a crate without one"
        ));
    }
    match &p.repository {
        None => out.push(format!(
            "{c}: no `repository` in [package]: add `repository.workspace = true`"
        )),
        Some(url) if !url.starts_with("https://") => out.push(format!(
            "{c}: `repository = \"{url}\"` is not an https:// address"
        )),
        Some(_) => {}
    }
    match &p.readme {
        None => out.push(format!(
            "{c}: no `readme` in [package]: add `readme = \"README.md\"` and the file, which \
             crates.io shows as the crate's page"
        )),
        Some(readme) if !p.dir.join(readme).is_file() => out.push(format!(
            "{c}: `readme = \"{readme}\"` names a file that does not exist"
        )),
        Some(_) => {}
    }
    if p.keywords.is_empty() {
        out.push(format!(
            "{c}: no `keywords` in [package]: name up to 5 words people search for"
        ));
    } else if p.keywords.len() > 5 {
        out.push(format!(
            "{c}: {} keywords, but crates.io takes at most 5",
            p.keywords.len()
        ));
    }
    for k in &p.keywords {
        let ok = k.len() <= 20
            && k.starts_with(|ch: char| ch.is_ascii_alphabetic())
            && k.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' || ch == '+');
        if !ok {
            out.push(format!(
                "{c}: keyword `{k}` is not one crates.io accepts (at most 20 ASCII letters, \
                 digits, `-`, `_` or `+`, starting with a letter)"
            ));
        }
    }
    if p.categories.is_empty() {
        out.push(format!(
            "{c}: no `categories` in [package]: pick up to 5 from https://crates.io/category_slugs"
        ));
    }
    match &p.rust_version {
        None => out.push(format!(
            "{c}: no `rust-version` in [package]: add `rust-version.workspace = true`"
        )),
        Some(rv) if rv != rust_version => out.push(format!(
            "{c}: `rust-version = \"{rv}\"` differs from the other crates' {rust_version}"
        )),
        Some(_) => {}
    }
    if !p.features.is_empty() {
        match &p.docs_rs {
            None => out.push(format!(
                "{c}: has features ({}) but no [package.metadata.docs.rs]: add \
                 `all-features = true` so docs.rs documents them",
                p.features.join(", ")
            )),
            Some(docs) if !docs.all_features => {
                let left_out: Vec<&str> = p
                    .features
                    .iter()
                    .filter(|f| !docs.features.contains(f))
                    .map(String::as_str)
                    .collect();
                if !left_out.is_empty() {
                    out.push(format!(
                        "{c}: [package.metadata.docs.rs] leaves out feature(s) {}: docs.rs \
                         would not document them (use `all-features = true`)",
                        left_out.join(", ")
                    ));
                }
            }
            Some(_) => {}
        }
    }
    if let Some(docs) = &p.docs_rs {
        for f in docs.features.iter().filter(|f| !p.features.contains(f)) {
            out.push(format!(
                "{c}: [package.metadata.docs.rs] names feature `{f}`, which the crate does not have"
            ));
        }
    }
}

/// True when requirement `req` pins exactly the release version (`0.1.0`, `^0.1.0`,
/// `=0.1.0`).
fn req_is(req: &str, version: &str) -> bool {
    let bare = req.trim_start_matches(['^', '=']).trim();
    bare == version
}

fn check_deps(ws: &Workspace, p: &Package, version: &str, out: &mut Vec<String>) {
    let c = &p.name;
    for d in &p.deps {
        if d.source.as_deref().is_some_and(|s| s.starts_with("git+")) && d.kind != Kind::Dev {
            out.push(format!(
                "{c} depends on {} from git: crates.io takes registry dependencies only",
                d.name
            ));
            continue;
        }
        if d.source.is_some() || d.name == *c {
            continue;
        }
        let Some(target) = ws.get(&d.name) else {
            if d.kind != Kind::Dev || d.has_version() {
                out.push(format!(
                    "{c} depends on {} by path, outside the workspace: crates.io could not \
                     resolve it",
                    d.name
                ));
            }
            continue;
        };
        let d_name = &d.name;
        match (d.kind, target.publish, d.has_version()) {
            (Kind::Dev, false, true) => out.push(format!(
                "{c} dev-depends on {d_name} with a version, but {d_name} is never published: \
                 make the dev-dependency path-only (no version) so publishing strips it"
            )),
            (Kind::Dev, _, false) => {}
            (_, false, _) => out.push(format!(
                "{c} depends on {d_name}, which is never published (`publish = false`): \
                 crates.io could not resolve it"
            )),
            (_, true, false) => out.push(format!(
                "{c} depends on {d_name} by path only: crates.io needs a version too \
                 (`version = \"{version}\"` in [workspace.dependencies])"
            )),
            (_, true, true) => {}
        }
        if target.publish && d.has_version() && !req_is(&d.req, version) {
            out.push(format!(
                "{c} depends on {d_name} `{}`, not the release version {version}: update the \
                 version in [workspace.dependencies]",
                d.req
            ));
        }
    }
}

/// The workspace dependencies that must be on the registry before `p` is published:
/// normal and build dependencies, and dev-dependencies that name a version (publishing
/// keeps those; path-only ones are stripped). Unpublished crates and `p` itself are left
/// out.
fn ordering_edges<'a>(ws: &'a Workspace, p: &'a Package) -> Vec<(&'a str, Kind)> {
    p.deps
        .iter()
        .filter(|d| d.source.is_none() && d.name != p.name)
        .filter(|d| d.kind != Kind::Dev || d.has_version())
        .filter(|d| ws.get(&d.name).is_some_and(|t| t.publish))
        .map(|d| (d.name.as_str(), d.kind))
        .collect()
}

/// The publish order: each crate after what it needs, ties broken by the crates'
/// layer and then by name; or the cycles and layer violations that prevent one.
pub fn order(ws: &Workspace) -> Result<Vec<String>, Vec<String>> {
    let nodes: Vec<&Package> = ws.packages.iter().filter(|p| p.publish).collect();
    let edges: BTreeMap<&str, Vec<(&str, Kind)>> = nodes
        .iter()
        .map(|p| (p.name.as_str(), ordering_edges(ws, p)))
        .collect();
    if let Some(cycle) = find_cycle(&edges) {
        return Err(vec![cycle]);
    }
    // Layers: listed crates have theirs; the others are placed by their normal and build
    // dependencies (at least "each backend"). Dev-dependencies never raise a layer, so a
    // versioned one pointing up is reported below.
    let mut layer: BTreeMap<&str, u32> = BTreeMap::new();
    fn layer_of<'a>(
        name: &'a str,
        edges: &BTreeMap<&'a str, Vec<(&'a str, Kind)>>,
        memo: &mut BTreeMap<&'a str, u32>,
    ) -> u32 {
        if let Some(l) = memo.get(name) {
            return *l;
        }
        let l = match LAYERS.iter().find(|(n, _)| *n == name) {
            Some((_, l)) => *l,
            None => {
                // A crate over backends only is one more backend (a backend's tests may
                // use another, say the in-memory one); over anything higher, it sits
                // one layer above.
                let highest = edges
                    .get(name)
                    .into_iter()
                    .flatten()
                    .filter(|(_, kind)| *kind != Kind::Dev)
                    .map(|(d, _)| match layer_of(d, edges, memo) {
                        2 => 2,
                        l => l + 1,
                    })
                    .max();
                highest.map_or(2, |h| h.max(2))
            }
        };
        memo.insert(name, l);
        l
    }
    for p in &nodes {
        layer_of(&p.name, &edges, &mut layer);
    }
    let mut problems = Vec::new();
    for (from, deps) in &edges {
        for (to, kind) in deps {
            let (lf, lt) = (layer[from], layer[to]);
            if lt > lf {
                let dev = if *kind == Kind::Dev {
                    " (a dev-dependency with a version: make it path-only)"
                } else {
                    ""
                };
                problems.push(format!(
                    "{from} ({}) depends on {to} ({}){dev}, so {to} would be published first, \
                     against the layers' order (types, backend, each backend, conformance, \
                     composite, runtime, models, facade, cli)",
                    layer_name(lf),
                    layer_name(lt)
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut placed: Vec<String> = Vec::new();
    let mut left: BTreeSet<&str> = edges.keys().copied().collect();
    while !left.is_empty() {
        let next = left
            .iter()
            .filter(|n| edges[*n].iter().all(|(d, _)| placed.iter().any(|p| p == d)))
            .min_by_key(|n| (layer[*n], **n))
            .copied();
        match next {
            Some(n) => {
                left.remove(n);
                placed.push(n.to_string());
            }
            // Unreachable after find_cycle, but never loop forever.
            None => return Err(vec!["the dependency graph has a cycle".into()]),
        }
    }
    Ok(placed)
}

fn layer_name(l: u32) -> &'static str {
    LAYER_NAMES
        .get(l as usize)
        .copied()
        .unwrap_or("above the cli")
}

/// A cycle in `edges`, written `a -> b (dev) -> a` with a hint, if there is one.
fn find_cycle(edges: &BTreeMap<&str, Vec<(&str, Kind)>>) -> Option<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit<'a>(
        n: &'a str,
        edges: &BTreeMap<&'a str, Vec<(&'a str, Kind)>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<(&'a str, Kind)>,
    ) -> Option<Vec<(&'a str, Kind)>> {
        match marks.get(n) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|(p, _)| *p == n).unwrap_or(0);
                return Some(path[start..].to_vec());
            }
            None => {}
        }
        marks.insert(n, Mark::Open);
        for (d, kind) in edges.get(n).into_iter().flatten() {
            path.push((n, *kind));
            if let Some(cycle) = visit(d, edges, marks, path) {
                return Some(cycle);
            }
            path.pop();
        }
        marks.insert(n, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for n in edges.keys() {
        let mut path = Vec::new();
        if let Some(cycle) = visit(n, edges, &mut marks, &mut path) {
            // "a dev-depends on b, which depends on a"
            let first = cycle.first().map_or("", |(n, _)| *n);
            let mut text = first.to_string();
            let mut has_dev = false;
            for (i, (_, kind)) in cycle.iter().enumerate() {
                let to = cycle.get(i + 1).map_or(first, |(n, _)| *n);
                if i > 0 {
                    text.push_str(", which");
                }
                if *kind == Kind::Dev {
                    has_dev = true;
                    text.push_str(&format!(" dev-depends on {to}"));
                } else {
                    text.push_str(&format!(" depends on {to}"));
                }
            }
            let hint = if has_dev {
                "make the dev-dependency path-only (no version) so publishing strips it \
                 (rust-lang/cargo#4242)"
            } else {
                "crates cannot depend on each other"
            };
            return Some(format!(
                "dependency cycle: {text}; no crate in it can be published first: {hint}"
            ));
        }
    }
    None
}

impl Plan {
    /// The plan as a person reads it before running it for real.
    pub fn render(&self, dry_run: bool, notes: &[String]) -> String {
        let mut out = String::new();
        let what = if dry_run {
            "dry run: nothing is uploaded"
        } else {
            "FOR REAL: crates are uploaded to crates.io"
        };
        out.push_str(&format!(
            "release plan: version {} ({what})\n\n",
            self.version
        ));
        out.push_str(&format!(
            "crates, in publish order ({}; rust-version {}):\n",
            self.order.len(),
            self.rust_version
        ));
        let width = self.order.iter().map(String::len).max().unwrap_or(0);
        for (i, name) in self.order.iter().enumerate() {
            let needs = self.needs.get(name).cloned().unwrap_or_default();
            let needs = if needs.is_empty() {
                "needs no other burrow crate".to_string()
            } else {
                format!("after {}", needs.join(", "))
            };
            out.push_str(&format!(
                "  {:>2}. {name:<width$} {}  {needs}\n",
                i + 1,
                self.version
            ));
        }
        if !self.unpublished.is_empty() {
            out.push_str(&format!(
                "never published: {}\n",
                self.unpublished.join(", ")
            ));
        }
        out.push_str("\nsteps:\n");
        out.push_str(
            "  1. cargo package: every crate above, in order, each built from its own tarball\n",
        );
        out.push_str(
            "  2. cargo publish --dry-run --no-verify: the same crates, as crates.io would get them\n",
        );
        if dry_run {
            out.push_str(
                "  (without --dry-run: on a clean main, each crate is then published in order,\n   \
                 waiting until crates.io serves it before the next, and tagged v<version>)\n",
            );
        } else {
            out.push_str(&format!(
                "  3. for each crate in order: cargo publish, then wait until crates.io serves {}\n",
                self.version
            ));
            out.push_str(&format!("  4. git tag v{}\n", self.version));
        }
        if !notes.is_empty() {
            out.push_str("\nnotes:\n");
            for note in notes {
                out.push_str(&format!("  - {note}\n"));
            }
        }
        out
    }
}
