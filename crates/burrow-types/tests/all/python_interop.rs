//! Interop with the real Python `StateBackend`: its documents load here byte for
//! byte, and what burrow writes loads there (fixtures in `tests/fixtures/python/`).

use std::collections::BTreeMap;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use burrow_types::{FileData, FilesDocument, files_document_to_json, parse_files_document};

use super::support::{fixture, has_surrogate_escape, read_fixture};

/// Documents written by pydantic-ai-backend's own code (see make_fixtures.py).
const PYTHON_DOCUMENTS: [&str; 3] = [
    "state_backend",
    "state_backend_ascii",
    "legacy_surrogateescape",
];

/// The document burrow writes for Python to check, and its expected bytes.
const BURROW_WRITTEN: &str = "python/burrow_written.json";
const BURROW_WRITTEN_EXPECTED: &str = "python/burrow_written.expected.json";

fn expected_bytes(rel: &str) -> BTreeMap<String, Vec<u8>> {
    let map: BTreeMap<String, String> =
        serde_json::from_str(&read_fixture(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    map.into_iter()
        .map(|(path, b64)| {
            let bytes = STANDARD
                .decode(&b64)
                .unwrap_or_else(|e| panic!("{rel} {path}: {e}"));
            (path, bytes)
        })
        .collect()
}

fn load(name: &str) -> FilesDocument {
    parse_files_document(&read_fixture(&format!("python/{name}.json")))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn bytes_of(doc: &FilesDocument) -> BTreeMap<String, Vec<u8>> {
    doc.iter()
        .map(|(path, data)| {
            let bytes = data.to_bytes().unwrap_or_else(|e| panic!("{path}: {e}"));
            (path.clone(), bytes)
        })
        .collect()
}

#[test]
fn every_python_document_reads_back_the_bytes_python_reads() {
    for name in PYTHON_DOCUMENTS {
        let expected = expected_bytes(&format!("python/{name}.expected.json"));
        assert!(
            expected.len() >= 20,
            "{name}: too few files: {}",
            expected.len()
        );
        let got = bytes_of(&load(name));
        for (path, want) in &expected {
            assert_eq!(got.get(path), Some(want), "{name}: bytes of {path}");
        }
        assert_eq!(got.len(), expected.len(), "{name}: same set of paths");
    }
}

#[test]
fn python_text_forms_match_burrow_splitting() {
    // The library's own split of "", "a\n" and CRLF, as stored by StateBackend.
    let doc = load("state_backend");
    assert_eq!(doc["/empty.txt"].content, [""]);
    assert_eq!(doc["/a_newline.txt"].content, ["a", ""]);
    assert_eq!(doc["/crlf.txt"].content, ["line 1\r", "line 2\r", ""]);
    assert_eq!(doc["/empty.txt"].encoding, None);
    for (path, data) in &doc {
        let bytes = data.to_bytes().unwrap_or_default();
        let canonical =
            FileData::from_bytes(&bytes, data.created_at.clone(), data.modified_at.clone());
        assert_eq!(data, &canonical, "{path} is in canonical form");
    }
}

#[test]
fn loading_keeps_python_timestamps() {
    let raw: serde_json::Value =
        serde_json::from_str(&read_fixture("python/state_backend.json")).unwrap_or_default();
    let doc = load("state_backend");
    for (path, data) in &doc {
        assert_eq!(raw[path]["created_at"], data.created_at.as_str(), "{path}");
        assert_eq!(
            raw[path]["modified_at"],
            data.modified_at.as_str(),
            "{path}"
        );
    }
    // The rewrite in make_fixtures.py kept created_at and moved modified_at.
    let hello = &doc["/hello.txt"];
    assert!(hello.modified_at > hello.created_at, "{hello:?}");
}

#[test]
fn python_nul_text_and_legacy_binary_load_as_base64() {
    let state = load("state_backend");
    let nul = &state["/binary/nul.txt"];
    assert_eq!(nul.encoding.as_deref(), Some("base64"));
    assert_eq!(nul.to_bytes().ok(), Some(b"abc\0def\n".to_vec()));
    let legacy = load("legacy_surrogateescape");
    assert_eq!(
        legacy["/binary/image.png"].encoding.as_deref(),
        Some("base64")
    );
    assert_eq!(legacy["/hello.txt"].content, ["hello", "world", ""]);
    assert!(legacy["/hello.txt"].is_text());
}

#[test]
fn serde_json_alone_refuses_the_legacy_document() {
    let legacy = read_fixture("python/legacy_surrogateescape.json");
    assert!(serde_json::from_str::<FilesDocument>(&legacy).is_err());
    // A current document is plain JSON, which the serde derives read as is.
    let current = read_fixture("python/state_backend.json");
    let plain: FilesDocument = serde_json::from_str(&current).unwrap_or_default();
    assert_eq!(bytes_of(&plain), bytes_of(&load("state_backend")));
}

#[test]
fn burrow_rewrites_every_python_document_as_strict_json() {
    for name in PYTHON_DOCUMENTS {
        let doc = load(name);
        let json = files_document_to_json(&doc);
        assert!(
            !has_surrogate_escape(&json),
            "{name}: surrogate escape in {json}"
        );
        assert!(!json.contains("\\u0000"), "{name}: NUL escape in output");
        let strict: Result<serde_json::Value, _> = serde_json::from_str(&json);
        assert!(strict.is_ok(), "{name}: serde_json refuses burrow's output");
        let again = parse_files_document(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(again, doc, "{name}: parse(write(doc)) == doc");
    }
}

/// The files burrow writes for Python to check: every sample of the Python
/// fixtures (from their expected bytes) plus a few of burrow's own.
fn burrow_document() -> (FilesDocument, BTreeMap<String, Vec<u8>>) {
    let mut files = expected_bytes("python/state_backend.expected.json");
    files.insert("/burrow/nul only.bin".into(), vec![0]);
    files.insert("/burrow/newline_only.txt".into(), b"\n".to_vec());
    files.insert("/burrow/trailing_cr.txt".into(), b"a\r\n\r".to_vec());
    let mut state = 0x2545_f491_u32;
    let noise = (0..1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state.to_le_bytes()[0]
        })
        .collect();
    files.insert("/burrow/noise.bin".into(), noise);
    files.insert(
        "/burrow/long line.txt".into(),
        "é".repeat(5000).into_bytes(),
    );
    let doc = files
        .iter()
        .map(|(path, bytes)| {
            let t = "2026-01-02T03:04:05.678901+00:00".to_owned();
            (path.clone(), FileData::from_bytes(bytes, t.clone(), t))
        })
        .collect();
    (doc, files)
}

#[test]
fn burrow_written_fixture_is_current() {
    let (doc, files) = burrow_document();
    let json = files_document_to_json(&doc);
    let expected: BTreeMap<&String, String> =
        files.iter().map(|(p, b)| (p, STANDARD.encode(b))).collect();
    let expected_json = serde_json::to_string_pretty(&expected).unwrap_or_default() + "\n";
    if std::env::var_os("BURROW_BLESS").is_some() {
        std::fs::write(fixture(BURROW_WRITTEN), &json).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(fixture(BURROW_WRITTEN_EXPECTED), &expected_json)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(
        read_fixture(BURROW_WRITTEN),
        json,
        "burrow_written.json is stale: rerun this test with BURROW_BLESS=1"
    );
    assert_eq!(read_fixture(BURROW_WRITTEN_EXPECTED), expected_json);
    assert!(!has_surrogate_escape(&json) && !json.contains("\\u0000"));
}

/// The test that needs Python with pydantic-ai-backend (`burrow_testkit::Part::PythonInterop`).
mod python {
    use super::*;

    #[test]
    fn python_reads_what_burrow_writes() {
        // The interpreter setup checked imports pydantic_ai_backends; if it does not
        // (BURROW_PYTHON set by hand to another), the check script fails and so does this test.
        let python = burrow_testkit::require(burrow_testkit::Part::PythonInterop);
        let out = Command::new(&python)
            .arg(fixture("python/make_fixtures.py"))
            .arg("--check")
            .arg(fixture(BURROW_WRITTEN))
            .output()
            .unwrap_or_else(|e| panic!("running {python}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{stdout}{stderr}");
        assert!(
            out.status.success(),
            "Python check failed:\n{stdout}{stderr}"
        );
        assert!(stdout.starts_with("ok: "), "{stdout}");
    }
}
