//! Golden tests of the Dockerfile a RuntimeConfig generates (`tests/fixtures/dockerfiles/NAME.json` -> `NAME.Dockerfile`).
//!
//! Set `BURROW_UPDATE_GOLDEN=1` to rewrite the `.Dockerfile` files after a deliberate change.

use std::path::PathBuf;

use burrow_backend::ErrorKind;
use burrow_docker::dockerfile;
use burrow_types::RuntimeConfig;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dockerfiles")
}

fn config(name: &str) -> RuntimeConfig {
    let text = std::fs::read_to_string(fixtures().join(format!("{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn generated_dockerfiles_match_the_golden_files() {
    let update = std::env::var_os("BURROW_UPDATE_GOLDEN").is_some();
    let mut cases = 0;
    let mut entries: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let generated = dockerfile(&config(&name)).unwrap();
        let golden = fixtures().join(format!("{name}.Dockerfile"));
        let text = format!("# tag: {}\n{}", generated.tag, generated.text);
        if update {
            std::fs::write(&golden, &text).unwrap();
        }
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|_| panic!("{} is missing", golden.display()));
        assert_eq!(
            text, want,
            "{name}: the generated Dockerfile differs from the golden file"
        );
        cases += 1;
    }
    assert!(cases >= 6, "only {cases} golden cases found");
}

#[test]
fn the_tag_follows_the_dockerfile_text() {
    let a = dockerfile(&config("pip-packages")).unwrap();
    assert_eq!(
        a,
        dockerfile(&config("pip-packages")).unwrap(),
        "generation is deterministic"
    );
    assert!(
        a.tag.starts_with("burrow-runtime-python-datascience:"),
        "{}",
        a.tag
    );
    let mut renamed = config("pip-packages");
    renamed.description = "another description".into();
    assert_eq!(
        dockerfile(&renamed).unwrap().text,
        a.text,
        "the description does not change the image"
    );
    let mut changed = config("pip-packages");
    changed.packages.push("scipy".into());
    assert_ne!(dockerfile(&changed).unwrap().tag, a.tag);
    let uid = dockerfile(&config("run-as-uid")).unwrap();
    assert_eq!(uid.user.as_deref(), Some("1000:1000"));
    assert_eq!(a.user, None);
}

#[test]
fn unsafe_configs_are_refused() {
    let mut c = config("minimal");
    c.env_vars.insert("BAD NAME".into(), "x".into());
    assert_eq!(
        dockerfile(&c).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut c = config("minimal");
    c.env_vars.insert("MULTI".into(), "a\nRUN evil".into());
    assert_eq!(
        dockerfile(&c).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut c = config("minimal");
    c.base_image = Some("debian\nRUN evil".into());
    assert_eq!(
        dockerfile(&c).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut c = config("minimal");
    c.work_dir = "relative".into();
    assert_eq!(
        dockerfile(&c).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut c = config("minimal");
    c.packages = vec!["--extra-index-url=http://evil".into()];
    assert_eq!(
        dockerfile(&c).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut c = config("minimal");
    c.base_image = None;
    c.image = Some("ready:1".into());
    assert_eq!(
        dockerfile(&c).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}
