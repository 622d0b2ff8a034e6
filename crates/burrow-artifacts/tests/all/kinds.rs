//! Kinds and validation: a schema from a Rust type or a JSON value, failures naming the JSON path, unknown kinds and the size limit.

use burrow_artifacts::{ArtifactErrorKind, Kinds};
use serde_json::json;

use super::support::{kinds, plan};

#[test]
fn a_valid_snapshot_of_each_kind_passes() {
    let kinds = kinds();
    kinds.validate("plan", &plan()).unwrap();
    kinds
        .validate("doc", &json!({"title": "t", "text": "hello"}))
        .unwrap();
    assert_eq!(kinds.names().collect::<Vec<_>>(), ["doc", "plan"]);
}

#[test]
fn a_validation_failure_names_the_failing_path() {
    let mut bad = plan();
    bad["steps"][1]["done"] = json!("yes");
    let err = kinds().validate("plan", &bad).unwrap_err();
    let ArtifactErrorKind::Validation { paths } = err.kind() else {
        panic!("not a validation error: {err:?}");
    };
    assert_eq!(paths, &["/steps/1/done".to_owned()]);
    assert!(err.message().contains("/steps/1/done"), "{}", err.message());
    assert!(
        err.message()
            .starts_with("the snapshot is not a valid plan")
    );
}

#[test]
fn a_missing_required_field_is_named_at_its_object() {
    let err = kinds()
        .validate("doc", &json!({"title": "t", "extra": 1}))
        .unwrap_err();
    let ArtifactErrorKind::Validation { paths } = err.kind() else {
        panic!("{err:?}");
    };
    // Both failures (text missing, extra not allowed) are at the root object.
    assert_eq!(paths, &["".to_owned()]);
    assert!(err.message().contains("at /:"), "{}", err.message());
}

#[test]
fn an_unknown_kind_is_refused_naming_the_kinds() {
    let err = kinds().validate("memo", &json!({})).unwrap_err();
    assert_eq!(err.kind(), &ArtifactErrorKind::UnknownKind);
    assert_eq!(
        err.message(),
        "there is no artifact kind \"memo\"; the kinds are: doc, plan."
    );
}

#[test]
fn a_ten_megabyte_snapshot_is_refused_by_the_default_limit() {
    let text = "x".repeat(10 * 1024 * 1024);
    let err = kinds()
        .validate("doc", &json!({"title": "big", "text": text}))
        .unwrap_err();
    let ArtifactErrorKind::TooLarge { size, limit } = err.kind() else {
        panic!("{err:?}");
    };
    assert_eq!(*limit, 1024 * 1024);
    assert!(*size > 10 * 1024 * 1024);
}

#[test]
fn the_size_limit_is_settable() {
    let snapshot = json!({"title": "t", "text": "y".repeat(100)});
    let small = kinds().with_max_snapshot_bytes(64);
    assert!(matches!(
        small.validate("doc", &snapshot).unwrap_err().kind(),
        ArtifactErrorKind::TooLarge { limit: 64, .. }
    ));
    kinds()
        .with_max_snapshot_bytes(20 * 1024 * 1024)
        .validate(
            "doc",
            &json!({"title": "t", "text": "z".repeat(10 * 1024 * 1024)}),
        )
        .unwrap();
}

#[test]
fn a_schema_that_is_not_one_and_a_bad_kind_name_are_refused() {
    let err = Kinds::new()
        .with_schema("doc", json!({"type": 12}))
        .unwrap_err();
    assert_eq!(err.kind(), &ArtifactErrorKind::InvalidArgument);
    let err = Kinds::new().with_schema("Bad Name", json!({})).unwrap_err();
    assert_eq!(err.kind(), &ArtifactErrorKind::InvalidArgument);
}

#[test]
fn a_rust_kind_renders_and_summarises_through_its_type() {
    let kinds = kinds();
    let (text, summary) = kinds.get("plan").unwrap().render(&plan());
    assert_eq!(text, "# Ship v1\n- [ ] write\n- [ ] test\n");
    assert_eq!(summary.as_deref(), Some("Ship v1 (2 steps)"));
    let (text, summary) = kinds
        .get("doc")
        .unwrap()
        .render(&json!({"title": "t", "text": "x"}));
    assert_eq!(text, "{\n  \"text\": \"x\",\n  \"title\": \"t\"\n}");
    assert_eq!(summary, None);
}
