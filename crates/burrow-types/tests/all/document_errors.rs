//! Documents burrow must refuse, each with a clear error, and the edges it must accept.

use burrow_types::{FileData, FileDataError, parse_files_document};

fn error_of(json: &str) -> FileDataError {
    match parse_files_document(json) {
        Err(error) => error,
        Ok(doc) => panic!("accepted {json}: {doc:?}"),
    }
}

const TIMES: &str = r#""created_at": "c", "modified_at": "m""#;

#[test]
fn syntax_errors_name_the_offset() {
    let error = error_of(r#"{"/a": {"content": ["x"], "#);
    assert!(matches!(error, FileDataError::Syntax { .. }), "{error:?}");
    assert!(
        error.to_string().contains("not valid JSON at byte"),
        "{error}"
    );
}

#[test]
fn lone_surrogates_that_are_no_escaped_byte_are_refused() {
    for escape in [
        "\\ud800", "\\udbff", "\\udc00", "\\udc7f", "\\ude00", "\\udfff",
    ] {
        let json = format!(r#"{{"/a": {{"content": ["x{escape}"], {TIMES}}}}}"#);
        let error = error_of(&json);
        assert!(
            matches!(error, FileDataError::Syntax { .. }),
            "{escape}: {error:?}"
        );
        assert!(error.to_string().contains("surrogate"), "{error}");
    }
}

#[test]
fn shape_errors_name_the_path() {
    let cases = [
        ("[]", "not a JSON object"),
        (r#"{"/a": 1}"#, "/a is a number"),
        (
            r#"{"/a": {"created_at": "c", "modified_at": "m"}}"#,
            "no \"content\"",
        ),
        (
            &format!(r#"{{"/a": {{"content": [1], {TIMES}}}}}"#),
            "a number in its",
        ),
        (
            r#"{"/a": {"content": [], "created_at": 1, "modified_at": "m"}}"#,
            "a number as its created_at",
        ),
        (
            r#"{"/a": {"content": [], "created_at": "\udcff", "modified_at": "m"}}"#,
            "not UTF-8",
        ),
        (
            &format!(r#"{{"\udcff": {{"content": [], {TIMES}}}}}"#),
            "path",
        ),
        (
            &format!(r#"{{"/a": {{"content": [], {TIMES}, "encoding": 1}}}}"#),
            "encoding",
        ),
    ];
    for (json, needle) in cases {
        let error = error_of(json);
        assert!(
            matches!(error, FileDataError::Shape { .. }),
            "{json}: {error:?}"
        );
        assert!(error.to_string().contains(needle), "{json}: {error}");
    }
}

#[test]
fn undecodable_entries_name_the_path_and_the_reason() {
    let bad_b64 =
        format!(r#"{{"/img.png": {{"content": ["not base64!"], {TIMES}, "encoding": "base64"}}}}"#);
    let error = error_of(&bad_b64);
    assert!(
        error.to_string().starts_with("the file /img.png"),
        "{error}"
    );
    assert!(error.to_string().contains("base64"), "{error}");
    let gzip = format!(r#"{{"/z": {{"content": ["x"], {TIMES}, "encoding": "gzip"}}}}"#);
    assert!(error_of(&gzip).to_string().contains("\"gzip\""));
}

#[test]
fn to_bytes_refuses_what_it_cannot_decode() {
    let mut data = FileData::from_bytes(b"\xff", "c".into(), "m".into());
    data.content = vec!["%%%".into()];
    assert!(matches!(
        data.to_bytes(),
        Err(FileDataError::InvalidBase64 { .. })
    ));
    data.encoding = Some("hex".into());
    assert!(matches!(
        data.to_bytes(),
        Err(FileDataError::UnknownEncoding { .. })
    ));
}

#[test]
fn lenient_edges_load_as_python_loads_them() {
    // Split base64, null encoding, extra members, duplicate keys (last wins),
    // an empty content list, whitespace everywhere.
    let json = format!(
        " {{ \"/b\" : {{ \"content\" : [\"aGVs\", \"bG8=\"], {TIMES}, \"encoding\": \"base64\" }},\n\
         \"/t\": {{\"content\": [\"x\"], {TIMES}, \"encoding\": null, \"extra\": {{\"k\": [1, 2.5e-3, true]}}}},\n\
         \"/e\": {{\"content\": [], {TIMES}}},\n\
         \"/d\": {{\"content\": [\"old\"], {TIMES}}}, \"/d\": {{\"content\": [\"new\"], {TIMES}}} }} "
    );
    let doc = parse_files_document(&json).unwrap_or_else(|e| panic!("{e}"));
    let bytes = |p: &str| doc[p].to_bytes().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bytes("/b"), b"hello");
    assert!(
        doc["/b"].is_text(),
        "text stored as base64 comes back as lines"
    );
    assert_eq!(bytes("/t"), b"x");
    assert_eq!(bytes("/e"), b"");
    assert_eq!(doc["/e"].content, [""]);
    assert_eq!(bytes("/d"), b"new");
    assert_eq!(doc.len(), 4);
}

#[test]
fn legacy_pairs_and_escaped_bytes_mix() {
    // 💀 as a surrogate pair whose low half lies in U+DC80..U+DCFF, then a real
    // escaped byte 0x80, then é raw and escaped.
    let json = format!(r#"{{"/m": {{"content": ["\ud83d\udc80\udc80é\u00e9"], {TIMES}}}}}"#);
    let doc = parse_files_document(&json).unwrap_or_else(|e| panic!("{e}"));
    let mut want = "💀".as_bytes().to_vec();
    want.push(0x80);
    want.extend_from_slice("éé".as_bytes());
    assert_eq!(doc["/m"].to_bytes().ok(), Some(want));
    assert_eq!(doc["/m"].encoding.as_deref(), Some("base64"));
}

#[test]
fn a_nul_in_a_path_or_a_timestamp_is_refused_on_reading() {
    for json in [
        format!(r#"{{"/a\u0000b": {{"content": ["x"], {TIMES}}}}}"#),
        r#"{"/a": {"content": ["x"], "created_at": "c\u0000", "modified_at": "m"}}"#.to_owned(),
        r#"{"/a": {"content": ["x"], "created_at": "c", "modified_at": "\u0000"}}"#.to_owned(),
    ] {
        let error = error_of(&json);
        assert!(matches!(error, FileDataError::Shape { .. }), "{error:?}");
        assert!(error.to_string().contains("NUL"), "{error}");
        assert!(!error.to_string().contains('\0'), "{error:?}");
    }
}

#[test]
fn errors_show_a_path_with_control_characters_quoted() {
    let error = error_of(r#"{"/a\nb": {"content": ["x"], "created_at": 1, "modified_at": "m"}}"#);
    let message = error.to_string();
    assert!(message.contains(r#""/a\nb""#), "{message}");
    assert!(!message.contains('\n'), "{message:?}");
}

#[test]
fn a_hand_built_document_never_writes_a_nul() {
    use burrow_types::{FilesDocument, files_document_to_json, try_files_document_to_json};
    let entry = |created: &str, encoding: Option<&str>| FileData {
        content: vec!["x".to_owned()],
        created_at: created.to_owned(),
        modified_at: "m".to_owned(),
        encoding: encoding.map(str::to_owned),
    };
    let cases = [
        ("/a\0b", entry("c", None), "path"),
        ("/a", entry("c\0", None), "created_at"),
        ("/a", entry("c", Some("base\0")), "encoding"),
    ];
    for (path, data, field) in cases {
        let doc = FilesDocument::from([(path.to_owned(), data)]);
        match try_files_document_to_json(&doc) {
            Err(FileDataError::Nul { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{path:?} {field}: {other:?}"),
        }
        let json = files_document_to_json(&doc);
        assert!(!json.contains("\\u0000") && !json.contains('\0'), "{json}");
        assert!(
            serde_json::from_str::<serde_json::Value>(&json).is_ok(),
            "{json}"
        );
    }
}
