//! Tests of the release planner on small synthetic workspaces, and of its command line.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::plan::{Dep, DocsRs, Kind, Package, Workspace, order, plan};
use super::{Args, crate_named};

/// A folder with a README.md, so the readme check passes; removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("xtask-release-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("README.md"), "# a crate\n").unwrap();
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A crate with every field crates.io wants, at 0.1.0.
fn krate(dir: &Dir, name: &str) -> Package {
    Package {
        name: name.into(),
        version: "0.1.0".into(),
        publish: true,
        dir: dir.0.clone(),
        license: Some("MIT OR Apache-2.0".into()),
        license_file: None,
        description: Some(format!("{name}, for tests")),
        repository: Some("https://github.com/burrow-rs/burrow".into()),
        readme: Some("README.md".into()),
        keywords: vec!["ai".into(), "agent".into()],
        categories: vec!["filesystem".into()],
        rust_version: Some("1.95".into()),
        features: Vec::new(),
        docs_rs: None,
        deps: Vec::new(),
    }
}

/// A dependency on a workspace crate: with `version` ("0.1.0") or path-only (`None`).
fn dep(name: &str, kind: Kind, version: Option<&str>) -> Dep {
    Dep {
        name: name.into(),
        kind,
        req: version.map_or("*".into(), |v| format!("^{v}")),
        source: None,
    }
}

fn needs(mut p: Package, deps: &[&str]) -> Package {
    for d in deps {
        p.deps.push(dep(d, Kind::Normal, Some("0.1.0")));
    }
    p
}

/// The shape of the real workspace, in a scrambled order.
fn burrow_like(dir: &Dir) -> Vec<Package> {
    let be = ["burrow-types", "burrow-backend"];
    vec![
        needs(
            krate(dir, "burrow-agent-cli"),
            &["burrow-agent", "burrow-runtime"],
        ),
        needs(
            krate(dir, "burrow-agent"),
            &[
                "burrow-types",
                "burrow-backend",
                "burrow-state",
                "burrow-fs",
                "burrow-composite",
                "burrow-runtime",
                "burrow-models",
            ],
        ),
        needs(krate(dir, "burrow-models"), &["burrow-runtime"]),
        needs(krate(dir, "burrow-runtime"), &be),
        needs(krate(dir, "burrow-composite"), &be),
        {
            let mut c = needs(krate(dir, "burrow-conformance"), &be);
            c.deps
                .push(dep("burrow-state", Kind::Normal, Some("0.1.0")));
            c
        },
        {
            let mut s = needs(krate(dir, "burrow-state"), &be);
            // Path-only: publishing strips it.
            s.deps.push(dep("burrow-conformance", Kind::Dev, None));
            s
        },
        {
            let mut f = needs(krate(dir, "burrow-fs"), &be);
            f.deps.push(dep("burrow-conformance", Kind::Dev, None));
            f.deps.push(dep("burrow-testkit", Kind::Dev, None));
            f
        },
        needs(krate(dir, "burrow-backend"), &["burrow-types"]),
        krate(dir, "burrow-types"),
        Package {
            publish: false,
            ..krate(dir, "burrow-testkit")
        },
    ]
}

fn ws(packages: Vec<Package>) -> Workspace {
    Workspace { packages }
}

#[test]
fn order_follows_the_graph_then_design_layers() {
    let dir = Dir::new();
    let plan = plan(&ws(burrow_like(&dir)), None).unwrap();
    assert_eq!(
        plan.order,
        vec![
            "burrow-types",
            "burrow-backend",
            "burrow-fs",
            "burrow-state",
            "burrow-conformance",
            "burrow-composite",
            "burrow-runtime",
            "burrow-models",
            "burrow-agent",
            "burrow-agent-cli",
        ]
    );
    assert_eq!(plan.version, "0.1.0");
    assert_eq!(plan.unpublished, vec!["burrow-testkit"]);
    assert_eq!(plan.needs["burrow-conformance"].len(), 3);
    // Path-only dev-dependencies do not order anything.
    assert_eq!(
        plan.needs["burrow-fs"],
        vec!["burrow-backend", "burrow-types"]
    );
}

#[test]
fn crates_it_has_never_seen_find_their_place_from_the_graph() {
    let dir = Dir::new();
    let mut packages = burrow_like(&dir);
    packages.push(needs(
        krate(&dir, "burrow-postgres"),
        &["burrow-types", "burrow-backend"],
    ));
    packages.push(needs(krate(&dir, "burrow-a2a"), &["burrow-runtime"]));
    let order = order(&ws(packages)).unwrap();
    let at = |n: &str| order.iter().position(|o| o == n).unwrap();
    // A new backend sits with the backends, before the suite.
    assert!(at("burrow-backend") < at("burrow-postgres"));
    assert!(at("burrow-postgres") < at("burrow-conformance"));
    // A crate over the runtime comes after it, before the facade.
    assert!(at("burrow-runtime") < at("burrow-a2a"));
    assert!(at("burrow-a2a") < at("burrow-agent"));
}

#[test]
fn a_versioned_dev_dependency_cycle_is_one_line() {
    let dir = Dir::new();
    let mut packages = burrow_like(&dir);
    for p in &mut packages {
        if p.name == "burrow-state" {
            p.deps = vec![dep("burrow-conformance", Kind::Dev, Some("0.1.0"))];
        }
    }
    assert_eq!(
        plan(&ws(packages), None).unwrap_err(),
        vec![
            "dependency cycle: burrow-state dev-depends on burrow-conformance, which depends on \
             burrow-state; no crate in it can be published first: make the \
             dev-dependency path-only (no version) so publishing strips it (rust-lang/cargo#4242)"
        ]
    );
}

#[test]
fn a_missing_field_is_one_line_naming_crate_and_field() {
    let dir = Dir::new();
    let mut packages = burrow_like(&dir);
    for p in &mut packages {
        if p.name == "burrow-fs" {
            p.description = None;
        }
        if p.name == "burrow-composite" {
            p.readme = Some("MISSING.md".into());
        }
    }
    assert_eq!(
        plan(&ws(packages), None).unwrap_err(),
        vec![
            "burrow-composite: `readme = \"MISSING.md\"` names a file that does not exist",
            "burrow-fs: no `description` in [package]: crates.io refuses a crate without one",
        ]
    );
}

#[test]
fn every_missing_field_is_named() {
    let dir = Dir::new();
    let bare = Package {
        license: None,
        description: None,
        repository: None,
        readme: None,
        keywords: Vec::new(),
        categories: Vec::new(),
        rust_version: None,
        ..krate(&dir, "burrow-types")
    };
    let refusals = plan(&ws(vec![bare]), None).unwrap_err();
    let fields: Vec<&str> = refusals
        .iter()
        .map(|r| r.split('`').nth(1).unwrap_or_default())
        .collect();
    assert_eq!(
        fields,
        vec![
            "license",
            "description",
            "repository",
            "readme",
            "keywords",
            "categories",
            "rust-version"
        ]
    );
}

#[test]
fn a_version_mismatch_is_one_line() {
    let dir = Dir::new();
    let mut packages = burrow_like(&dir);
    for p in &mut packages {
        if p.name == "burrow-fs" {
            p.version = "0.2.0".into();
        }
    }
    assert_eq!(
        plan(&ws(packages), None).unwrap_err(),
        vec![
            "burrow-fs is at version 0.2.0, but the release is 0.1.0: every published crate \
             carries the one version (set [workspace.package] version and the versions in \
             [workspace.dependencies])"
        ]
    );
}

#[test]
fn a_release_version_the_crates_do_not_carry_is_refused_per_crate() {
    let dir = Dir::new();
    let packages = vec![
        needs(krate(&dir, "burrow-backend"), &["burrow-types"]),
        krate(&dir, "burrow-types"),
    ];
    let refusals = plan(&ws(packages), Some("0.2.0")).unwrap_err();
    assert_eq!(refusals.len(), 3, "{refusals:#?}");
    assert!(
        refusals[0].starts_with("burrow-backend is at version 0.1.0, but the release is 0.2.0")
    );
    assert_eq!(
        refusals[1],
        "burrow-backend depends on burrow-types `^0.1.0`, not the release version 0.2.0: \
         update the version in [workspace.dependencies]"
    );
    assert!(refusals[2].starts_with("burrow-types is at version 0.1.0, but the release is 0.2.0"));
}

#[test]
fn unpublished_and_path_only_dependencies_are_refused_where_crates_io_would() {
    let dir = Dir::new();
    let mut packages = burrow_like(&dir);
    for p in &mut packages {
        if p.name == "burrow-backend" {
            p.deps.push(dep("burrow-testkit", Kind::Normal, None));
        }
        if p.name == "burrow-types" {
            p.deps.push(dep("burrow-testkit", Kind::Dev, Some("0.1.0")));
        }
        if p.name == "burrow-composite" {
            p.deps = vec![
                dep("burrow-types", Kind::Normal, None),
                dep("burrow-backend", Kind::Normal, Some("0.1.0")),
            ];
        }
    }
    assert_eq!(
        plan(&ws(packages), None).unwrap_err(),
        vec![
            "burrow-backend depends on burrow-testkit, which is never published \
             (`publish = false`): crates.io could not resolve it",
            "burrow-composite depends on burrow-types by path only: crates.io needs a version \
             too (`version = \"0.1.0\"` in [workspace.dependencies])",
            "burrow-types dev-depends on burrow-testkit with a version, but burrow-testkit is \
             never published: make the dev-dependency path-only (no version) so publishing \
             strips it",
        ]
    );
}

#[test]
fn a_dependency_against_design_layers_is_refused() {
    let dir = Dir::new();
    let mut packages = burrow_like(&dir);
    for p in &mut packages {
        if p.name == "burrow-fs" {
            p.deps = vec![dep("burrow-conformance", Kind::Dev, Some("0.1.0"))];
        }
    }
    assert_eq!(
        order(&ws(packages)).unwrap_err(),
        vec![
            "burrow-fs (each backend) depends on burrow-conformance (conformance) (a \
             dev-dependency with a version: make it path-only), so burrow-conformance would \
             be published first, against the layers' order (types, backend, each backend, \
             conformance, composite, runtime, models, facade, cli)"
        ]
    );
}

#[test]
fn features_need_docs_rs_metadata_that_covers_them() {
    let dir = Dir::new();
    let featured = |docs_rs| Package {
        features: vec!["mcp".into(), "s3".into()],
        docs_rs,
        ..krate(&dir, "burrow-types")
    };
    assert_eq!(
        plan(&ws(vec![featured(None)]), None).unwrap_err(),
        vec![
            "burrow-types: has features (mcp, s3) but no [package.metadata.docs.rs]: add \
             `all-features = true` so docs.rs documents them"
        ]
    );
    let partial = DocsRs {
        all_features: false,
        features: vec!["s3".into(), "gcs".into()],
    };
    assert_eq!(
        plan(&ws(vec![featured(Some(partial))]), None).unwrap_err(),
        vec![
            "burrow-types: [package.metadata.docs.rs] leaves out feature(s) mcp: docs.rs would \
             not document them (use `all-features = true`)",
            "burrow-types: [package.metadata.docs.rs] names feature `gcs`, which the crate \
             does not have",
        ]
    );
    let all = DocsRs {
        all_features: true,
        features: Vec::new(),
    };
    assert!(plan(&ws(vec![featured(Some(all))]), None).is_ok());
}

#[test]
fn keywords_follow_crates_io_rules() {
    let dir = Dir::new();
    let p = Package {
        keywords: vec!["ok".into(), "not ok".into()],
        ..krate(&dir, "burrow-types")
    };
    assert_eq!(
        plan(&ws(vec![p]), None).unwrap_err(),
        vec![
            "burrow-types: keyword `not ok` is not one crates.io accepts (at most 20 ASCII \
             letters, digits, `-`, `_` or `+`, starting with a letter)"
        ]
    );
}

/// Writes a tiny workspace whose two crates dev-depend on each other with a version.
fn write_cycle_workspace(root: &Path) {
    let manifest = |name: &str, extra: &str| {
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
             rust-version = \"1.95\"\nlicense = \"MIT\"\ndescription = \"d\"\n\
             repository = \"https://github.com/burrow-rs/burrow\"\nreadme = \"README.md\"\n\
             keywords = [\"ai\"]\ncategories = [\"filesystem\"]\n\n{extra}"
        )
    };
    fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nresolver = \"3\"\nmembers = [\"a\", \"b\"]\n",
    )
    .unwrap();
    for (name, extra) in [
        (
            "a",
            "[dependencies]\nb = { path = \"../b\", version = \"0.1.0\" }\n",
        ),
        (
            "b",
            "[dev-dependencies]\na = { path = \"../a\", version = \"0.1.0\" }\n",
        ),
    ] {
        let dir = root.join(name);
        fs::create_dir_all(dir.join("src")).unwrap();
        fs::write(dir.join("Cargo.toml"), manifest(name, extra)).unwrap();
        fs::write(dir.join("README.md"), "# x\n").unwrap();
        fs::write(dir.join("src/lib.rs"), "//! x\n").unwrap();
    }
}

#[test]
fn reads_cargo_metadata_of_a_real_workspace_and_refuses_its_cycle() {
    let dir = Dir::new();
    write_cycle_workspace(&dir.0);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ws = Workspace::from_metadata(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let names: Vec<&str> = ws.packages.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(ws.packages[0].keywords, vec!["ai"]);
    assert_eq!(ws.packages[0].rust_version.as_deref(), Some("1.95"));
    assert_eq!(
        plan(&ws, None).unwrap_err(),
        vec![
            "dependency cycle: a depends on b, which dev-depends on a; no crate in it can be \
             published first: make the dev-dependency path-only (no version) so publishing \
             strips it (rust-lang/cargo#4242)"
        ]
    );
}

#[test]
fn the_real_workspace_publishes_in_design_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let plan = match super::make_plan(&root, None).unwrap() {
        Ok(plan) => plan,
        Err(refusals) => panic!("the workspace cannot be released:\n{}", refusals.join("\n")),
    };
    // The layers (docs/ARCHITECTURE.md, issue 17): types, backend, each backend, conformance, composite,
    // runtime, models, facade, cli.
    let expected = [
        "burrow-types",
        "burrow-backend",
        "burrow-conformance",
        "burrow-composite",
        "burrow-runtime",
        "burrow-models",
        "burrow-agent",
        "burrow-agent-cli",
    ];
    let known: Vec<&str> = plan
        .order
        .iter()
        .map(String::as_str)
        .filter(|n| expected.contains(n))
        .collect();
    let wanted: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|n| plan.order.iter().any(|o| o == n))
        .collect();
    assert_eq!(known, wanted);
    let at = |n: &str| plan.order.iter().position(|o| o == n);
    for backend in [
        "burrow-state",
        "burrow-fs",
        "burrow-sqlite",
        "burrow-object-store",
        "burrow-docker",
    ] {
        assert!(at(backend) > at("burrow-backend"), "{backend}");
        assert!(at(backend) < at("burrow-conformance"), "{backend}");
    }
    assert!(plan.unpublished.contains(&"burrow-testkit".to_string()));
    assert!(plan.unpublished.contains(&"xtask".to_string()));
}

#[test]
fn args_and_cargo_status_lines() {
    let parse = |a: &[&str]| Args::parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        parse(&["--dry-run", "--version", "0.2.0"]).unwrap(),
        Args {
            dry_run: true,
            version: Some("0.2.0".into())
        }
    );
    assert!(parse(&["--version", "two"]).is_err());
    assert!(parse(&["--force"]).is_err());
    assert_eq!(
        crate_named("   Verifying burrow-fs v0.1.0 (/w/crates/burrow-fs)"),
        Some((
            "burrow-fs".into(),
            "verifying (building from its tarball)".into()
        ))
    );
    assert_eq!(crate_named("   Compiling libc v0.2.1"), None);
    assert_eq!(crate_named("Packaging files"), None);
}

#[test]
fn a_failing_cargo_package_names_the_crate_and_the_step() {
    let dir = Dir::new();
    write_cycle_workspace(&dir.0);
    // `b` reads a file outside its package: it builds here, but not from its tarball.
    fs::write(dir.0.join("outside.txt"), "x").unwrap();
    fs::write(
        dir.0.join("b/src/lib.rs"),
        "//! x\npub const X: &str = include_str!(\"../../outside.txt\");\n",
    )
    .unwrap();
    fs::write(
        dir.0.join("b/Cargo.toml"),
        fs::read_to_string(dir.0.join("b/Cargo.toml"))
            .unwrap()
            .replace(
                "[dev-dependencies]\na = { path = \"../a\", version = \"0.1.0\" }\n",
                "",
            ),
    )
    .unwrap();
    // Its own target dir, so nothing lands in the one running the tests.
    let target = dir.0.join("target");
    let target = target.to_str().unwrap();
    let err = super::cargo_tracked(
        &dir.0,
        "cargo package",
        &[
            "package",
            "--offline",
            "--allow-dirty",
            "--no-metadata",
            "--target-dir",
            target,
            "-p",
            "b",
        ],
    )
    .unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.starts_with(
            "b: step `cargo package` failed while verifying (building from its tarball) it"
        ),
        "{text}"
    );
}

#[test]
fn crates_io_answers_read_as_free_ours_taken_or_unchecked() {
    use super::{NameOnCratesIo as N, name_status};
    let ours = "https://github.com/burrow-rs/burrow";
    // What `cargo info --registry crates-io` prints and says, as captured.
    let missing = "    Updating crates.io index\nerror: could not find `burrow-agent` in registry \
                   `https://github.com/rust-lang/crates.io-index`\n";
    assert_eq!(name_status("burrow-agent", ours, Err(missing)), N::Free);
    let info =
        "burrow\nversion: 0.0.1\nlicense: MIT\nrepository: https://github.com/kirino-org/burrow\n";
    assert_eq!(
        name_status("burrow", ours, Ok(info)),
        N::Taken("https://github.com/kirino-org/burrow".into())
    );
    let mine = format!("burrow-types\nversion: 0.1.0\nrepository: {ours}\n");
    assert_eq!(name_status("burrow-types", ours, Ok(&mine)), N::Ours);
    assert_eq!(
        name_status("burrow-x", ours, Ok("burrow-x\nversion: 1.0.0\n")),
        N::Taken("none given".into())
    );
    let offline = "    Updating crates.io index\nwarning: spurious network error\n\
                   error: failed to query replaced source registry `crates-io`\n";
    assert_eq!(
        name_status("burrow-fs", ours, Err(offline)),
        N::Unchecked("error: failed to query replaced source registry `crates-io`".into())
    );
    // Another name's "could not find" is not this one's.
    assert!(matches!(
        name_status("burrow-fs", ours, Err(missing)),
        N::Unchecked(_)
    ));
}

#[test]
fn name_notes_say_which_are_free_taken_and_unchecked() {
    use super::{NameOnCratesIo as N, name_notes};
    let names = vec![
        ("burrow-types".to_string(), N::Free),
        ("burrow-agent".to_string(), N::Free),
        ("burrow-fs".to_string(), N::Ours),
        (
            "burrow".to_string(),
            N::Taken("https://github.com/kirino-org/burrow".into()),
        ),
        (
            "burrow-cli".to_string(),
            N::Unchecked("error: offline".into()),
        ),
    ];
    let (notes, refusals) = name_notes(&names);
    assert_eq!(
        notes,
        vec![
            "names on crates.io's index: free: burrow-types, burrow-agent; ours already: burrow-fs",
            "the name burrow is taken on crates.io (repository https://github.com/kirino-org/burrow); \
             publishing it needs its owners to add ours, or another name",
            "could not check on crates.io's index: burrow-cli (error: offline)",
        ]
    );
    assert_eq!(refusals, vec![notes[1].clone()]);
    let (notes, refusals) = name_notes(&[("burrow-agent".to_string(), N::Free)]);
    assert_eq!(
        notes,
        vec!["names on crates.io's index: free: burrow-agent"]
    );
    assert!(refusals.is_empty());
}
