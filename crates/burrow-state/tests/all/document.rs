//! `files()` and `from_files()`: the workspace as a FileData document and back.

use burrow_backend::{Backend, ErrorKind, FileContext, VPath};
use burrow_state::StateBackend;
use burrow_types::{FileData, FilesDocument, files_document_to_json, parse_files_document};

fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

fn text(content: &[&str], created: &str, modified: &str) -> FileData {
    FileData {
        content: content.iter().map(|s| (*s).to_owned()).collect(),
        created_at: created.to_owned(),
        modified_at: modified.to_owned(),
        encoding: None,
    }
}

const CASES: &[(&str, &[u8])] = &[
    ("/empty.txt", b""),
    ("/notes/a.md", b"# title\nbody\n"),
    ("/notes/crlf.txt", b"one\r\ntwo\r\n"),
    ("/bin/blob.bin", &[0, 159, 146, 150, 255, b'\n']),
    ("/bin/nul.txt", b"a\0b"),
    (
        "/\u{65e5}\u{672c}/\u{00e9}t\u{00e9}.txt",
        "caf\u{e9}\n".as_bytes(),
    ),
    ("/[...slug]/foo..bar.txt", b"x"),
];

#[tokio::test]
async fn every_byte_survives_files_and_from_files_and_json() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    for (path, bytes) in CASES {
        b.write_bytes(&ctx, &p(path), bytes).await.unwrap();
    }
    let doc = b.files();
    assert_eq!(doc.len(), CASES.len());
    assert_eq!(doc["/notes/a.md"].content, ["# title", "body", ""]);
    assert_eq!(doc["/bin/blob.bin"].encoding.as_deref(), Some("base64"));
    assert_eq!(doc["/bin/nul.txt"].encoding.as_deref(), Some("base64"));

    let json = files_document_to_json(&doc);
    // The direct writer gives the same text, byte for byte.
    assert_eq!(b.files_json(), json);
    let mut streamed = Vec::new();
    let written = b.write_files_json(&mut streamed).unwrap();
    assert_eq!(
        (streamed, written),
        (json.clone().into_bytes(), json.len() as u64)
    );
    let restored = StateBackend::from_files(parse_files_document(&json).unwrap()).unwrap();
    for (path, bytes) in CASES {
        assert_eq!(
            restored.read_bytes(&ctx, &p(path)).await.unwrap(),
            *bytes,
            "{path}"
        );
    }
    assert_eq!(restored.files(), doc);
    // The index is rebuilt: listings work on the restored store.
    let root = restored.ls(&ctx, &VPath::root(), 100).await.unwrap();
    let names: Vec<&str> = root.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["[...slug]", "bin", "empty.txt", "notes", "\u{65e5}\u{672c}"]
    );
}

#[tokio::test]
async fn replacing_a_file_keeps_its_created_at() {
    let mut doc = FilesDocument::new();
    doc.insert(
        "/a.txt".into(),
        text(&["old"], "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z"),
    );
    let b = StateBackend::from_files(doc).unwrap();
    let ctx = FileContext::default();
    let listed = b.ls(&ctx, &VPath::root(), 10).await.unwrap();
    assert_eq!(
        listed.entries[0].modified_at.as_deref(),
        Some("2020-01-02T00:00:00Z")
    );

    b.write(&ctx, &p("/a.txt"), "new").await.unwrap();
    let after_write = b.files()["/a.txt"].clone();
    assert_eq!(after_write.created_at, "2020-01-01T00:00:00Z");
    assert_ne!(after_write.modified_at, "2020-01-02T00:00:00Z");
    assert!(
        after_write.modified_at.parse::<jiff::Timestamp>().is_ok(),
        "{}",
        after_write.modified_at
    );

    b.edit(&ctx, &p("/a.txt"), "new", "newer", false)
        .await
        .unwrap();
    assert_eq!(b.files()["/a.txt"].created_at, "2020-01-01T00:00:00Z");
    assert_eq!(b.files()["/a.txt"].content, ["newer"]);

    // A new file gets both stamps from the clock, and they agree.
    b.write(&ctx, &p("/b.txt"), "b").await.unwrap();
    let fresh = &b.files()["/b.txt"];
    assert_eq!(fresh.created_at, fresh.modified_at);
}

#[test]
fn documents_that_cannot_be_a_workspace_are_failures() {
    let ok = || text(&["x"], "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z");
    let bad_keys: &[&[&str]] = &[
        &["a.txt"],
        &["/a/../b"],
        &["//a"],
        &["/a/"],
        &["/"],
        &["/../x"],
        &["/a", "/a/b"],
        &["/d/a", "/d/a/b/c"],
    ];
    for keys in bad_keys {
        let doc: FilesDocument = keys.iter().map(|k| ((*k).to_owned(), ok())).collect();
        let err = StateBackend::from_files(doc).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Failure, "{keys:?}");
        assert!(
            err.message()
                .starts_with("the files document cannot be loaded"),
            "{}",
            err.message()
        );
    }
    let mut doc = FilesDocument::new();
    let mut broken = ok();
    broken.encoding = Some("base64".into());
    broken.content = vec!["!!not base64!!".into()];
    doc.insert("/x.bin".into(), broken);
    let err = StateBackend::from_files(doc).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failure);
    assert!(err.message().contains("/x.bin"), "{}", err.message());

    assert_eq!(
        StateBackend::from_files(FilesDocument::new())
            .unwrap()
            .file_count(),
        0
    );
}

#[tokio::test]
async fn over_size_files_from_a_document_are_refused_by_reads_and_skipped_by_grep() {
    use burrow_backend::{GrepQuery, Limits};
    let mut doc = FilesDocument::new();
    doc.insert(
        "/big.txt".to_owned(),
        text(
            &["needle in a big file", "more"],
            "2020-01-01T00:00:00Z",
            "2020-01-01T00:00:00Z",
        ),
    );
    doc.insert(
        "/small.txt".to_owned(),
        text(&["needle"], "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z"),
    );
    let limits = Limits {
        max_file_size: 10,
        ..Limits::default()
    };
    let b = StateBackend::from_files_with_limits(doc, limits).unwrap();
    let ctx = FileContext::default();
    let err = b.read(&ctx, &p("/big.txt"), 0, 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    let err = b.read_bytes(&ctx, &p("/big.txt")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    let found = b
        .grep(&ctx, &GrepQuery::fixed("needle"), &p("/"), 10)
        .await
        .unwrap();
    let paths: Vec<&str> = found.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["/small.txt"], "grep searched an over-size file");
    // Grep of the over-size file itself finds nothing either.
    let found = b
        .grep(&ctx, &GrepQuery::fixed("needle"), &p("/big.txt"), 10)
        .await
        .unwrap();
    assert!(found.matches.is_empty());
}

#[tokio::test]
async fn entries_without_timestamps_load_and_the_next_write_fills_in_modified_at() {
    // As pydantic-ai-backend 0.2.29 reads (`.get("modified_at")`) and 0.2.37 never does.
    let json = r#"{"/old.txt": {"content": ["a", ""]}, "/half.txt": {"content": ["b"], "created_at": "2024-01-01T00:00:00Z"}}"#;
    let doc = parse_files_document(json).unwrap();
    let backend = StateBackend::from_files(doc).unwrap();
    let ctx = FileContext::default();
    let listing = backend.ls(&ctx, &p("/"), 10).await.unwrap();
    assert!(
        listing.entries.iter().all(|e| e.modified_at.is_none()),
        "{listing:?}"
    );
    assert_eq!(
        backend.read_bytes(&ctx, &p("/old.txt")).await.unwrap(),
        b"a\n"
    );
    // Written back, an unknown time stays an absent key.
    assert_eq!(
        files_document_to_json(&backend.files()),
        r#"{"/half.txt":{"content":["b"],"created_at":"2024-01-01T00:00:00Z"},"/old.txt":{"content":["a",""]}}"#
    );
    backend
        .write_bytes(&ctx, &p("/old.txt"), b"new")
        .await
        .unwrap();
    let files = backend.files();
    assert!(!files["/old.txt"].modified_at.is_empty());
    assert!(
        files["/old.txt"].created_at.is_empty(),
        "a creation time stays unknown"
    );
}

#[test]
fn a_journal_replays_over_its_document_and_twice_gives_the_same() {
    use burrow_state::journal::Change;
    let mut doc = FilesDocument::new();
    doc.insert("/a".into(), text(&["1"], "c", "m"));
    doc.insert("/d".into(), text(&["x"], "c", "m"));
    let changes = vec![
        Change::Put {
            path: "/b".into(),
            bytes: b"2".to_vec(),
            created_at: "c2".into(),
            modified_at: "m2".into(),
        },
        Change::Delete { path: "/a".into() },
        Change::Put {
            path: "/a/inner".into(),
            bytes: b"3".to_vec(),
            created_at: "c3".into(),
            modified_at: "m3".into(),
        },
    ];
    let once = StateBackend::from_files_replayed(doc, changes.clone(), Default::default()).unwrap();
    let folded = once.files();
    assert_eq!(folded.keys().collect::<Vec<_>>(), ["/a/inner", "/b", "/d"]);
    // A kill between a compaction's rename and its journal cut: the records replay over their own result.
    let twice =
        StateBackend::from_files_replayed(folded.clone(), changes, Default::default()).unwrap();
    assert_eq!(twice.files(), folded);
}

/// A workspace of a few MiB is written through the small buffer in many
/// pieces, the same text as the document built whole.
#[tokio::test]
async fn a_document_written_in_pieces_is_the_whole_document() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    for i in 0..600 {
        let content: String = (0..200)
            .map(|j| format!("line {j} of \"{i}\"\twith\\escapes\n"))
            .collect();
        b.write_bytes(
            &ctx,
            &p(&format!("/d{}/f{i}.txt", i % 7)),
            content.as_bytes(),
        )
        .await
        .unwrap();
    }
    let json = b.files_json();
    assert!(json.len() > 4 << 20, "{} bytes", json.len());
    struct Pieces(Vec<u8>, usize);
    impl std::io::Write for Pieces {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.1 += 1;
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Pieces(Vec::new(), 0);
    let written = b.write_files_json(&mut out).unwrap();
    assert_eq!(written, json.len() as u64);
    assert!(out.1 > 10, "{} writes", out.1);
    assert!(out.0 == json.as_bytes(), "the pieces differ from the whole");
}

/// The record encoded straight from the store is the record of the change
/// `change_at` builds: for a written file (a stamped instant), a file loaded
/// with text times, one with an unknown time, and a path with no file.
#[tokio::test]
async fn a_record_encoded_from_the_store_is_the_record_of_its_change() {
    use burrow_state::journal::{self, Change};
    let mut doc = FilesDocument::new();
    doc.insert("/loaded.txt".into(), text(&["a", ""], "c0", "m0"));
    doc.insert("/unknown.txt".into(), text(&["b"], "", ""));
    let b = StateBackend::from_files(doc).unwrap();
    let ctx = FileContext::default();
    b.write_bytes(&ctx, &p("/new/w.txt"), b"new\n")
        .await
        .unwrap();
    let mut records = Vec::new();
    for path in ["/loaded.txt", "/unknown.txt", "/new/w.txt", "/gone.txt"] {
        let mut whole = Vec::new();
        journal::encode(&b.change_at(&p(path)), &mut whole).unwrap();
        let mut direct = Vec::new();
        b.encode_change_at(&p(path), &mut direct).unwrap();
        assert_eq!(direct, whole, "{path}");
        records.extend_from_slice(&direct);
    }
    let read = journal::read_records(&records).unwrap();
    assert_eq!(read.changes.len(), 4);
    assert!(
        matches!(&read.changes[2], Change::Put { created_at, modified_at, .. }
        if !created_at.is_empty() && created_at == modified_at)
    );
    assert_eq!(
        read.changes[3],
        Change::Delete {
            path: "/gone.txt".into()
        }
    );
}

/// An edit journaled as a splice replays over the document it was made on,
/// is refused over one that already holds it (or any other bytes), and a
/// load that starts after the compaction's mark gets the document whole.
#[tokio::test]
async fn a_splice_replays_once_and_the_mark_skips_what_a_compaction_folded() {
    use burrow_state::journal::{self, Change};
    let mut doc = FilesDocument::new();
    doc.insert("/log.txt".into(), text(&["a", ""], "c", "m"));
    let before = StateBackend::from_files(doc.clone()).unwrap();
    let before_json = before.files_json();
    // The edit as a running process makes it: its record appended to a journal.
    let mut bytes = Vec::new();
    let result = before
        .edit_journaled(&p("/log.txt"), "a", "aa", false, &mut bytes)
        .unwrap();
    assert_eq!(result.occurrences, Some(1));
    assert!(bytes.len() < 100, "{} bytes", bytes.len());
    // A refused edit journals nothing and changes nothing.
    let refused = before.edit_journaled(&p("/log.txt"), "zzz", "y", false, &mut bytes);
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::InvalidArgument);
    let mut changes = journal::read_records(&bytes).unwrap().changes;
    assert!(matches!(changes[0], Change::Splice { .. }), "{changes:?}");
    let folded_json = before.files_json();
    let folded = parse_files_document(&folded_json).unwrap();

    let replayed =
        StateBackend::from_files_replayed(doc.clone(), changes.clone(), Default::default())
            .unwrap();
    assert_eq!(replayed.files(), folded);
    // Another process applies the record to its copy.
    let other = StateBackend::from_files(doc.clone()).unwrap();
    other.apply(changes[0].clone()).unwrap();
    assert_eq!(other.files(), folded);
    // Over the folded document the splice does not apply: refused, naming the file.
    let twice =
        StateBackend::from_files_replayed(folded.clone(), changes.clone(), Default::default());
    let message = twice.unwrap_err().message().to_owned();
    assert!(message.contains("/log.txt"), "{message}");
    assert!(other.apply(changes[0].clone()).is_err());
    assert_eq!(other.files(), folded, "a refused splice changes nothing");

    // The compaction's mark names the folded document: a load over it
    // starts after the mark, a load over the old one replays everything.
    changes.push(Change::Folded {
        len: folded_json.len() as u64,
        crc: journal::crc32(folded_json.as_bytes()),
    });
    let start = journal::replay_start(&changes, folded_json.as_bytes());
    assert_eq!(start, 2);
    let after_mark = StateBackend::from_files_replayed(
        folded.clone(),
        changes[start..].to_vec(),
        Default::default(),
    )
    .unwrap();
    assert_eq!(after_mark.files(), folded);
    assert_eq!(journal::replay_start(&changes, before_json.as_bytes()), 0);
    let all = StateBackend::from_files_replayed(doc, changes, Default::default()).unwrap();
    assert_eq!(all.files(), folded);
}
