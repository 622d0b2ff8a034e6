//! Property tests: any bytes survive burrow's document, and any legacy Python
//! encoding of them decodes back to them.

use std::collections::BTreeMap;

use burrow_types::{FileData, FilesDocument, files_document_to_json, parse_files_document};
use proptest::prelude::*;

use super::support::{has_surrogate_escape, python_legacy_document};

/// Bytes biased towards the interesting cases: text, line endings, NUL,
/// multi-byte characters and stray high bytes.
fn interesting_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\0".to_vec()),
        Just("é".as_bytes().to_vec()),
        Just("😀".as_bytes().to_vec()),
        Just(b"\"\\".to_vec()),
        any::<u8>().prop_map(|b| vec![b]),
        "[a-z ]{0,8}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat())
}

fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        interesting_bytes()
    ]
}

fn stamp() -> String {
    "2026-01-01T00:00:00+00:00".to_owned()
}

proptest! {
    #[test]
    fn any_bytes_round_trip_through_the_document(bytes in any_bytes()) {
        let data = FileData::from_bytes(&bytes, stamp(), stamp());
        let doc: FilesDocument = BTreeMap::from([("/f".to_owned(), data)]);
        let json = files_document_to_json(&doc);
        prop_assert!(!has_surrogate_escape(&json));
        prop_assert!(!json.contains("\\u0000"));
        let back = parse_files_document(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back, &doc);
        let read = back["/f"].to_bytes().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(read, bytes);
    }

    #[test]
    fn many_files_with_any_names_round_trip(
        files in prop::collection::btree_map("/[^\u{0}]{0,24}", any_bytes(), 0..8)
    ) {
        let doc: FilesDocument = files
            .iter()
            .map(|(path, bytes)| (path.clone(), FileData::from_bytes(bytes, stamp(), stamp())))
            .collect();
        let json = files_document_to_json(&doc);
        let strict: Result<serde_json::Value, _> = serde_json::from_str(&json);
        prop_assert!(strict.is_ok());
        let back = parse_files_document(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, doc);
    }

    /// Whatever a document holds where its keys and timestamps are, what
    /// burrow reads it writes back unchanged, and what it writes has no NUL.
    #[test]
    fn any_document_read_writes_back_with_no_nul(
        key in "/[a\u{0}\n]{0,4}",
        created in "[0-9\u{0}]{0,3}",
    ) {
        let json = serde_json::json!({ key.clone(): {
            "content": ["x"], "created_at": created, "modified_at": "m"
        } }).to_string();
        match parse_files_document(&json) {
            Ok(doc) => {
                let written = burrow_types::try_files_document_to_json(&doc)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(!written.contains("\\u0000"));
                prop_assert_eq!(parse_files_document(&written).ok(), Some(doc));
            }
            Err(error) => prop_assert!(key.contains('\0') || created.contains('\0'), "{}", error),
        }
    }

    #[test]
    fn legacy_python_encoding_decodes_to_the_same_bytes(bytes in any_bytes()) {
        let legacy = python_legacy_document("/f", &bytes);
        let doc = parse_files_document(&legacy).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let read = doc["/f"].to_bytes().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&read, &bytes);
        prop_assert_eq!(&doc["/f"], &FileData::from_bytes(&bytes, stamp(), stamp()));
    }
}
