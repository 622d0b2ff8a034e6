//! The journal of a state document: framed, checksummed records of changes, each the effect of one change.
//!
//! A journal is a header followed by records, appended one group at a time:
//!
//! - **Header** (20 bytes): the magic `BURROWJ1`, the generation (u64, little
//!   endian: which compaction of the document this journal extends) and a
//!   CRC-32 of those 16 bytes.
//! - **Record**: the payload's length (u32 LE), a CRC-32 of those 4 bytes, a
//!   CRC-32 of the payload, then the payload: a [`Change`].
//!
//! A record holds a change's **effect**, never the operation: the whole file
//! as it is after a write ([`Change::Put`]), its deletion, or for an edit the
//! bytes that changed, bound to the exact bytes they were changed in
//! ([`Change::Splice`]: the length and CRC-32 of the file before, so it is
//! refused over any other bytes). Put and Delete replay twice as once; a
//! splice does not, so a compaction marks the journal with the identity of
//! the document it is about to put in place ([`Change::Folded`], synced before
//! the rename) and a replay over that document starts after the mark
//! ([`replay_start`]): a kill between the rename of a compaction and the cut
//! of its journal applies no record twice (docs/adr/0353).
//!
//! Reading tells a torn end from damage: bytes after the last whole record
//! that do not make a whole one (a kill mid-append; never acknowledged) are
//! [`Records::torn`], to be dropped; a whole frame whose checksum fails, or a
//! length whose own checksum fails, is damage, refused as a failure.

use burrow_backend::{Error, Result};

/// The bytes a journal starts with.
pub const MAGIC: &[u8; 8] = b"BURROWJ1";

/// The length of a journal's header.
pub const HEADER_LEN: usize = 20;

/// The length of a record's frame before its payload.
const FRAME_LEN: usize = 12;

const PUT: u8 = 1;
const DELETE: u8 = 2;
const SPLICE: u8 = 3;
const FOLDED: u8 = 4;

/// One change's effect on the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file at `path` is now `bytes`, with these timestamps (the empty
    /// string: unknown).
    Put {
        /// The file's normalised absolute path.
        path: String,
        /// Its whole content.
        bytes: Vec<u8>,
        /// Its created_at as the document writes it.
        created_at: String,
        /// Its modified_at as the document writes it.
        modified_at: String,
    },
    /// The file at `path` is gone.
    Delete {
        /// The file's normalised absolute path.
        path: String,
    },
    /// The file at `path`, which held `base_len` bytes whose CRC-32 is
    /// `base_crc`, now holds `inserted` in place of its bytes `at..at +
    /// removed`, and was modified at `modified_at` (an edit: the record
    /// costs the size of the change, not of the file). It applies only to
    /// those very bytes: replayed over anything else it is refused.
    Splice {
        /// The file's normalised absolute path.
        path: String,
        /// The file's length before the change.
        base_len: u64,
        /// The CRC-32 of the file's bytes before the change.
        base_crc: u32,
        /// Where the changed bytes start.
        at: u64,
        /// How many bytes from `at` were replaced.
        removed: u64,
        /// What replaced them.
        inserted: Vec<u8>,
        /// Its modified_at as the document writes it.
        modified_at: String,
    },
    /// A compaction was about to put in place a document of `len` bytes
    /// whose CRC-32 is `crc`, holding every record before this one: when the
    /// document is that one, those records are already in it (see
    /// [`replay_start`]).
    Folded {
        /// The document's length.
        len: u64,
        /// The CRC-32 of the document's bytes.
        crc: u32,
    },
}

impl Change {
    /// The path the change is about; `None` for [`Change::Folded`].
    pub fn path(&self) -> Option<&str> {
        match self {
            Change::Put { path, .. } | Change::Delete { path } | Change::Splice { path, .. } => {
                Some(path)
            }
            Change::Folded { .. } => None,
        }
    }

    /// The bytes of the file after this splice, from `base`, the file's
    /// bytes before it; `None` when `base` is not what the splice was made
    /// on (its length or CRC-32 differ) or this is not a splice.
    pub fn spliced(&self, base: &[u8]) -> Option<Vec<u8>> {
        let Change::Splice {
            base_len,
            base_crc,
            at,
            removed,
            inserted,
            ..
        } = self
        else {
            return None;
        };
        if base.len() as u64 != *base_len || crc32(base) != *base_crc {
            return None;
        }
        let at = usize::try_from(*at).ok()?;
        let end = at.checked_add(usize::try_from(*removed).ok()?)?;
        let (head, tail) = (base.get(..at)?, base.get(end..)?);
        let mut out = Vec::with_capacity(head.len() + inserted.len() + tail.len());
        out.extend_from_slice(head);
        out.extend_from_slice(inserted);
        out.extend_from_slice(tail);
        Some(out)
    }
}

/// Where replaying `changes` over the document `doc` starts: just after the
/// last [`Change::Folded`] mark that names `doc` (a compaction that put `doc`
/// in place and was stopped before it cut the journal: every record before
/// the mark is in `doc`), or at 0. The document's CRC-32 is computed only
/// when a mark of its length is there.
pub fn replay_start(changes: &[Change], doc: &[u8]) -> usize {
    let mut crc = None;
    for (i, change) in changes.iter().enumerate().rev() {
        if let Change::Folded { len, crc: want } = change
            && *len == doc.len() as u64
            && *crc.get_or_insert_with(|| crc32(doc)) == *want
        {
            return i + 1;
        }
    }
    0
}

/// The header of a journal of generation `generation`.
pub fn header(generation: u64) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[..8].copy_from_slice(MAGIC);
    out[8..16].copy_from_slice(&generation.to_le_bytes());
    let crc = crc32(&out[..16]);
    out[16..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The generation of the journal whose first bytes are `bytes`.
///
/// # Errors
///
/// A failure when the bytes are not a whole, intact header (a journal is
/// created whole, by a rename, so a short one is damage too).
pub fn read_header(bytes: &[u8]) -> Result<u64> {
    let damaged = || Error::failure_msg("its journal header is damaged");
    let head = bytes.get(..HEADER_LEN).ok_or_else(damaged)?;
    if &head[..8] != MAGIC || crc32(&head[..16]).to_le_bytes() != head[16..20] {
        return Err(damaged());
    }
    let mut generation = [0u8; 8];
    generation.copy_from_slice(&head[8..16]);
    Ok(u64::from_le_bytes(generation))
}

/// Appends the record of `change` to `out`.
///
/// # Errors
///
/// A refusal (TooLarge-like InvalidArgument) when the record would pass 4 GiB.
pub fn encode(change: &Change, out: &mut Vec<u8>) -> Result<()> {
    match change {
        Change::Put {
            path,
            bytes,
            created_at,
            modified_at,
        } => encode_put(
            path,
            bytes,
            |out| out.extend_from_slice(created_at.as_bytes()),
            |out| out.extend_from_slice(modified_at.as_bytes()),
            out,
        ),
        Change::Delete { path } => {
            let start = out.len();
            out.extend_from_slice(&[0u8; FRAME_LEN]);
            out.push(DELETE);
            put_field(out, path.as_bytes());
            frame(out, start)
        }
        Change::Splice {
            path,
            base_len,
            base_crc,
            at,
            removed,
            inserted,
            modified_at,
        } => {
            let start = out.len();
            out.extend_from_slice(&[0u8; FRAME_LEN]);
            out.push(SPLICE);
            put_field(out, path.as_bytes());
            put_field(out, modified_at.as_bytes());
            out.extend_from_slice(&base_len.to_le_bytes());
            out.extend_from_slice(&base_crc.to_le_bytes());
            out.extend_from_slice(&at.to_le_bytes());
            out.extend_from_slice(&removed.to_le_bytes());
            out.extend_from_slice(&(inserted.len() as u64).to_le_bytes());
            out.extend_from_slice(inserted);
            frame(out, start)
        }
        Change::Folded { len, crc } => {
            let start = out.len();
            out.extend_from_slice(&[0u8; FRAME_LEN]);
            out.push(FOLDED);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&crc.to_le_bytes());
            frame(out, start)
        }
    }
}

/// Appends the record of the edit of `path` from `base` to `result` to
/// `out`: a [`Change::Splice`] of the bytes between their longest common
/// start and end (for one replacement, its old text and new), whatever
/// the edit did to find them. O(size of the file) to compare and checksum,
/// O(the change) to write.
///
/// # Errors
///
/// As [`encode`].
pub fn encode_splice(
    path: &str,
    base: &[u8],
    result: &[u8],
    modified_at: impl FnOnce(&mut Vec<u8>),
    out: &mut Vec<u8>,
) -> Result<()> {
    let head = common_prefix(base, result);
    let most = base.len().min(result.len()) - head;
    let tail = common_suffix(&base[head..], &result[head..]).min(most);
    let inserted = &result[head..result.len() - tail];
    let start = out.len();
    out.reserve(FRAME_LEN + 1 + 8 + path.len() + 32 + 40 + inserted.len());
    out.extend_from_slice(&[0u8; FRAME_LEN]);
    out.push(SPLICE);
    put_field(out, path.as_bytes());
    put_written(out, modified_at);
    out.extend_from_slice(&(base.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32(base).to_le_bytes());
    out.extend_from_slice(&(head as u64).to_le_bytes());
    out.extend_from_slice(&((base.len() - head - tail) as u64).to_le_bytes());
    out.extend_from_slice(&(inserted.len() as u64).to_le_bytes());
    out.extend_from_slice(inserted);
    frame(out, start)
}

/// How many bytes `a` and `b` start with alike (compared 32 at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 32 <= n && a[i..i + 32] == b[i..i + 32] {
        i += 32;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// How many bytes `a` and `b` end with alike (compared 32 at a time).
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + 32 <= n && a[n - i - 32..n - i] == b[n - i - 32..n - i] {
        i += 32;
    }
    while i < n && a[n - i - 1] == b[n - i - 1] {
        i += 1;
    }
    i
}

/// A writer that passes its bytes on to `W` and keeps their count and
/// CRC-32: what a [`Change::Folded`] mark names.
#[derive(Debug)]
pub struct Checksummed<W> {
    inner: W,
    hasher: crc32fast::Hasher,
    len: u64,
}

impl<W: std::io::Write> Checksummed<W> {
    /// Counts and checksums what is written to `inner`.
    pub fn new(inner: W) -> Checksummed<W> {
        Checksummed {
            inner,
            hasher: crc32fast::Hasher::new(),
            len: 0,
        }
    }

    /// The length and CRC-32 of what was written.
    pub fn finish(self) -> (u64, u32) {
        (self.len, self.hasher.finalize())
    }
}

impl<W: std::io::Write> std::io::Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        let written = buf.get(..n).unwrap_or_default();
        self.hasher.update(written);
        self.len += written.len() as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Appends the record of a [`Change::Put`] of `path` holding `bytes` to
/// `out`, its timestamps written by `created_at` and `modified_at` straight
/// into the record: the same bytes as [`encode`] of the `Change`, without
/// building it (no copy of the file, no `String` per timestamp).
///
/// # Errors
///
/// As [`encode`].
pub fn encode_put(
    path: &str,
    bytes: &[u8],
    created_at: impl FnOnce(&mut Vec<u8>),
    modified_at: impl FnOnce(&mut Vec<u8>),
    out: &mut Vec<u8>,
) -> Result<()> {
    let start = out.len();
    out.reserve(FRAME_LEN + 1 + 12 + path.len() + 2 * 32 + 8 + bytes.len());
    out.extend_from_slice(&[0u8; FRAME_LEN]);
    out.push(PUT);
    put_field(out, path.as_bytes());
    put_written(out, created_at);
    put_written(out, modified_at);
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
    frame(out, start)
}

/// A field whose bytes `write` appends, after its length.
fn put_written(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0u8; 4]);
    write(out);
    // A timestamp: far below 4 GiB.
    let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Fills in the frame of the record whose payload follows the frame's
/// room at `start` of `out`, or takes the record off again when it is too
/// large.
fn frame(out: &mut Vec<u8>, start: usize) -> Result<()> {
    let Ok(len) = u32::try_from(out.len() - start - FRAME_LEN) else {
        out.truncate(start);
        return Err(Error::invalid_argument(
            "the change is too large for one journal record (4 GiB).",
        ));
    };
    let len = len.to_le_bytes();
    let payload_crc = crc32(&out[start + FRAME_LEN..]);
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + 8].copy_from_slice(&crc32(&len).to_le_bytes());
    out[start + 8..start + 12].copy_from_slice(&payload_crc.to_le_bytes());
    Ok(())
}

fn put_field(out: &mut Vec<u8>, field: &[u8]) {
    // Paths and timestamps: far below 4 GiB (a path is at most 4 KiB).
    let len = u32::try_from(field.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(field);
}

/// The records read from a run of journal bytes.
#[derive(Debug, Default)]
pub struct Records {
    /// The changes, in order.
    pub changes: Vec<Change>,
    /// How many bytes the whole records take (where the next append goes).
    pub len: usize,
    /// Bytes followed the last whole record without making a whole one.
    pub torn: bool,
}

/// Reads the records in `bytes` (a journal past its header).
///
/// # Errors
///
/// A failure naming the record's offset (from the start of `bytes`) when a
/// record is damaged: a checksum fails or its payload does not decode.
pub fn read_records(bytes: &[u8]) -> Result<Records> {
    let mut records = Records::default();
    let mut at = 0usize;
    while at < bytes.len() {
        let Some(frame) = bytes.get(at..at + FRAME_LEN) else {
            records.torn = true;
            break;
        };
        let damaged =
            |what: &str| Error::failure_msg(format!("its journal record at byte {at} {what}"));
        if crc32(&frame[..4]).to_le_bytes() != frame[4..8] {
            return Err(damaged("has a damaged length"));
        }
        let len = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        let Some(payload) = bytes.get(at + FRAME_LEN..at + FRAME_LEN + len) else {
            records.torn = true;
            break;
        };
        if crc32(payload).to_le_bytes() != frame[8..12] {
            return Err(damaged("fails its checksum"));
        }
        let change = decode(payload).ok_or_else(|| damaged("does not decode"))?;
        records.changes.push(change);
        at += FRAME_LEN + len;
        records.len = at;
    }
    Ok(records)
}

/// The change a payload holds; `None` when it does not decode.
fn decode(payload: &[u8]) -> Option<Change> {
    let (&tag, mut rest) = payload.split_first()?;
    if tag == FOLDED {
        let len = take_u64(&mut rest)?;
        let crc = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
        return rest.is_empty().then_some(Change::Folded { len, crc });
    }
    let path = take_string(&mut rest)?;
    let change = match tag {
        SPLICE => {
            let modified_at = take_string(&mut rest)?;
            let base_len = take_u64(&mut rest)?;
            let base_crc = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
            let at = take_u64(&mut rest)?;
            let removed = take_u64(&mut rest)?;
            let len = usize::try_from(take_u64(&mut rest)?).ok()?;
            let inserted = take(&mut rest, len)?.to_vec();
            Change::Splice {
                path,
                base_len,
                base_crc,
                at,
                removed,
                inserted,
                modified_at,
            }
        }
        PUT => {
            let created_at = take_string(&mut rest)?;
            let modified_at = take_string(&mut rest)?;
            let len =
                usize::try_from(u64::from_le_bytes(take(&mut rest, 8)?.try_into().ok()?)).ok()?;
            let bytes = take(&mut rest, len)?.to_vec();
            Change::Put {
                path,
                bytes,
                created_at,
                modified_at,
            }
        }
        DELETE => Change::Delete { path },
        _ => return None,
    };
    rest.is_empty().then_some(change)
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if rest.len() < n {
        return None;
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Some(head)
}

fn take_u64(rest: &mut &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(take(rest, 8)?.try_into().ok()?))
}

fn take_string(rest: &mut &[u8]) -> Option<String> {
    let len = u32::from_le_bytes(take(rest, 4)?.try_into().ok()?) as usize;
    String::from_utf8(take(rest, len)?.to_vec()).ok()
}

/// CRC-32 (IEEE 802.3, as zlib computes it).
pub fn crc32(bytes: &[u8]) -> u32 {
    // Each record's bytes are checksummed on every append and every replay:
    // crc32fast folds 64 bytes a step with carry-less multiplication
    // (PCLMULQDQ) where the CPU has it, about 20 times fewer instructions
    // than slicing by 8 tables.
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(path: &str, bytes: &[u8]) -> Change {
        Change::Put {
            path: path.to_owned(),
            bytes: bytes.to_vec(),
            created_at: "c".to_owned(),
            modified_at: String::new(),
        }
    }

    /// The bytewise CRC-32 of zlib, the reference.
    fn crc32_bytewise(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    0xedb8_8320 ^ (crc >> 1)
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
        // Across the folding steps' sizes, with remainders, against the bytewise form.
        let long: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 251) as u8).collect();
        for len in [
            1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 4999, 5000,
        ] {
            assert_eq!(
                crc32(&long[..len]),
                crc32_bytewise(&long[..len]),
                "{len} bytes"
            );
        }
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414f_a339
        );
    }

    #[test]
    fn records_round_trip_and_a_torn_end_is_dropped() {
        let changes = vec![
            put("/a", b"x\n"),
            Change::Delete {
                path: "/b".to_owned(),
            },
            put("/c", &[0, 255]),
        ];
        let mut bytes = Vec::new();
        for c in &changes {
            encode(c, &mut bytes).unwrap();
        }
        let read = read_records(&bytes).unwrap();
        assert_eq!(read.changes, changes);
        assert_eq!(read.len, bytes.len());
        assert!(!read.torn);
        for cut in 1..bytes.len() {
            let read = read_records(&bytes[..bytes.len() - cut]).unwrap();
            assert!(read.torn || read.len == bytes.len() - cut);
            assert_eq!(read.changes, changes[..read.changes.len()]);
        }
    }

    #[test]
    fn a_put_encoded_in_place_is_the_put_encoded_whole() {
        let change = Change::Put {
            path: "/d/a.txt".to_owned(),
            bytes: b"one\ntwo\n".to_vec(),
            created_at: "2024-01-15T10:30:00Z".to_owned(),
            modified_at: String::new(),
        };
        let mut whole = Vec::new();
        encode(&change, &mut whole).unwrap();
        let mut in_place = b"before".to_vec();
        encode_put(
            "/d/a.txt",
            b"one\ntwo\n",
            |out| out.extend_from_slice(b"2024-01-15T10:30:00Z"),
            |_| {},
            &mut in_place,
        )
        .unwrap();
        assert_eq!(&in_place[..6], b"before");
        assert_eq!(&in_place[6..], &whole[..]);
        assert_eq!(read_records(&in_place[6..]).unwrap().changes, [change]);
    }

    /// The splice of `base` to `result`, read back from its record.
    fn splice_of(base: &[u8], result: &[u8]) -> Change {
        let mut bytes = Vec::new();
        encode_splice(
            "/f",
            base,
            result,
            |out| out.extend_from_slice(b"m"),
            &mut bytes,
        )
        .unwrap();
        let mut read = read_records(&bytes).unwrap();
        assert_eq!(read.changes.len(), 1);
        read.changes.remove(0)
    }

    #[test]
    fn a_splice_gives_the_result_from_its_base_and_nothing_from_other_bytes() {
        let pairs: [(&[u8], &[u8]); 9] = [
            (
                b"line 7 of file 3: x\nmore\n",
                b"LINE 7 of file 3: x\nmore\n",
            ),
            (b"aaa", b"aaaa"),
            (b"aaaa", b"aaa"),
            (b"abcabc", b"abXabc"),
            (b"", b"new"),
            (b"old", b""),
            (b"a\nb\na\n", b"z\nb\nz\n"),
            (&[7u8; 100], &[7u8; 40]),
            (&[0u8, 255, 1, 2], &[0u8, 1, 2]),
        ];
        for (base, result) in pairs {
            let splice = splice_of(base, result);
            assert_eq!(splice.spliced(base).as_deref(), Some(result), "{base:?}");
            // Any other bytes are refused: another length, or the same
            // length with one byte changed.
            let mut longer = base.to_vec();
            longer.push(b'!');
            assert_eq!(splice.spliced(&longer), None);
            if let Some(first) = base.first() {
                let mut other = base.to_vec();
                other[0] = first ^ 1;
                assert_eq!(splice.spliced(&other), None);
            }
        }
        // The record of a one-word edit of a long file holds the word, not the file.
        let base: Vec<u8> = (0..50)
            .flat_map(|i| format!("line {i} of a file: some text to make it a line\n").into_bytes())
            .collect();
        let result = String::from_utf8(base.clone())
            .unwrap()
            .replacen("line 7 ", "LINE 7 ", 1);
        let mut bytes = Vec::new();
        encode_splice("/f", &base, result.as_bytes(), |_| {}, &mut bytes).unwrap();
        assert!(bytes.len() < 100, "{} bytes", bytes.len());
        let Change::Splice {
            inserted, removed, ..
        } = splice_of(&base, result.as_bytes())
        else {
            panic!("not a splice");
        };
        assert_eq!((inserted.as_slice(), removed), (&b"LINE"[..], 4));
    }

    #[test]
    fn replay_starts_after_the_last_mark_naming_the_document() {
        let doc = b"{\"/a\": {}}";
        let mark = |bytes: &[u8]| Change::Folded {
            len: bytes.len() as u64,
            crc: crc32(bytes),
        };
        let put = put("/a", b"x");
        assert_eq!(replay_start(&[put.clone(), put.clone()], doc), 0);
        // A mark for another document (the rename never happened): all replay.
        assert_eq!(replay_start(&[put.clone(), mark(b"{}")], doc), 0);
        let same_length = b"{\"/b\": {}}";
        assert_eq!(replay_start(&[put.clone(), mark(same_length)], doc), 0);
        // The document is the one marked: the records before the mark are in it.
        let changes = [
            put.clone(),
            mark(b"{}"),
            put.clone(),
            mark(doc),
            put.clone(),
        ];
        assert_eq!(replay_start(&changes, doc), 4);
        // Marks round-trip through their records.
        let mut bytes = Vec::new();
        for change in &changes {
            encode(change, &mut bytes).unwrap();
        }
        assert_eq!(read_records(&bytes).unwrap().changes, changes);
    }

    #[test]
    fn checksummed_counts_and_checksums_what_it_passes_on() {
        use std::io::Write as _;
        let mut sink = Vec::new();
        let mut out = Checksummed::new(&mut sink);
        out.write_all(b"hello ").unwrap();
        out.write_all(b"world").unwrap();
        let (len, crc) = out.finish();
        assert_eq!((len, crc), (11, crc32(b"hello world")));
        assert_eq!(sink, b"hello world");
    }

    #[test]
    fn any_flipped_byte_of_a_whole_record_is_damage() {
        let mut bytes = Vec::new();
        encode(&put("/a", b"hello"), &mut bytes).unwrap();
        encode(&put("/b", b"world"), &mut bytes).unwrap();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            let outcome = read_records(&bad);
            // A flipped byte in the last record's length may read as a longer
            // (torn) record; everything else is damage.
            match outcome {
                Err(e) => assert!(e.message().contains("journal record"), "{e}"),
                Ok(read) => panic!("byte {i}: read as {read:?}"),
            }
        }
    }

    #[test]
    fn headers_round_trip_and_a_bad_one_is_damage() {
        assert_eq!(read_header(&header(7)).unwrap(), 7);
        let mut bad = header(7);
        bad[9] ^= 1;
        assert!(read_header(&bad).is_err());
        assert!(read_header(&header(7)[..19]).is_err());
    }
}
