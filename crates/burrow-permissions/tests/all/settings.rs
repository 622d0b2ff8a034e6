//! Settings files: the `permissions` object read whole, several files merged in order, modes and bad shapes refused.

use burrow_permissions::{PermissionMode, PermissionSettings, SettingsErrorKind};

#[test]
fn a_settings_file_yields_its_permissions_and_ignores_the_rest() {
    let s = PermissionSettings::from_settings_json(
        r#"{"hooks": {"PreToolUse": []}, "permissions": {"allow": ["Read"], "ask": ["Bash"],
            "deny": ["Read(.env)"], "defaultMode": "acceptEdits", "additionalDirectories": ["../x"],
            "somethingNew": true}}"#,
    )
    .unwrap();
    assert_eq!(s.allow, ["Read"]);
    assert_eq!(s.ask, ["Bash"]);
    assert_eq!(s.deny, ["Read(.env)"]);
    let p = s.compile().unwrap();
    assert_eq!(p.mode(), PermissionMode::AcceptEdits);
    assert_eq!(p.deny_rules()[0].text(), "Read(.env)");
    let none = PermissionSettings::from_settings_json(r#"{"hooks": {}}"#).unwrap();
    assert!(none.compile().unwrap().is_empty());
}

#[test]
fn files_merge_in_order_lists_concatenated_later_scalars_win() {
    let user = PermissionSettings::from_settings_json(
        r#"{"permissions": {"deny": ["Read(/a)"], "allow": ["Read"], "defaultMode": "plan"}}"#,
    )
    .unwrap();
    let project = PermissionSettings::from_settings_json(
        r#"{"permissions": {"deny": ["Read(/b)"], "defaultMode": "dontAsk"}}"#,
    )
    .unwrap();
    let local =
        PermissionSettings::from_settings_json(r#"{"permissions": {"ask": ["Bash"]}}"#).unwrap();
    let merged = PermissionSettings::merged([user, project, local]);
    assert_eq!(merged.deny, ["Read(/a)", "Read(/b)"]);
    assert_eq!(merged.allow, ["Read"]);
    assert_eq!(merged.ask, ["Bash"]);
    assert_eq!(merged.default_mode.as_deref(), Some("dontAsk"));
    assert_eq!(merged.compile().unwrap().mode(), PermissionMode::DontAsk);
}

#[test]
fn every_mode_by_its_claude_code_name() {
    for mode in PermissionMode::ALL {
        assert_eq!(mode.as_str().parse::<PermissionMode>().unwrap(), mode);
        let json = serde_json::to_string(&mode).unwrap();
        assert_eq!(json, format!("\"{}\"", mode.as_str()));
    }
    for bad in ["auto", "Default", "bypass", ""] {
        let err = bad.parse::<PermissionMode>().unwrap_err();
        assert_eq!(err.kind(), SettingsErrorKind::InvalidSettings);
        assert!(
            err.message().contains(&format!("{bad:?}")),
            "{}",
            err.message()
        );
    }
}

#[test]
fn bad_settings_are_refused_in_one_sentence() {
    for (text, needle) in [
        (r#"[]"#, "JSON object"),
        (
            r#"{"permissions": {"deny": "Read"}}"#,
            "\"permissions\" object is invalid",
        ),
        (
            r#"{"permissions": {"deny": [1]}}"#,
            "\"permissions\" object is invalid",
        ),
        (r#"{"permissions": "#, "not valid JSON"),
    ] {
        let err = PermissionSettings::from_settings_json(text).unwrap_err();
        assert_eq!(err.kind(), SettingsErrorKind::InvalidSettings);
        assert!(err.message().contains(needle), "{text}: {}", err.message());
    }
    let s = PermissionSettings::from_settings_json(
        r#"{"permissions": {"deny": ["Read(/ok)", "Read(~/no)"]}}"#,
    )
    .unwrap();
    let err = s.compile().unwrap_err();
    assert_eq!(err.kind(), SettingsErrorKind::InvalidRule);
    assert!(
        err.message().contains("\"Read(~/no)\""),
        "{}",
        err.message()
    );
    let s = PermissionSettings::from_settings_json(
        r#"{"permissions": {"defaultMode": "bypassPermissions", "disableBypassPermissionsMode": "disable"}}"#,
    )
    .unwrap();
    assert_eq!(
        s.compile().unwrap_err().kind(),
        SettingsErrorKind::InvalidSettings
    );
}
