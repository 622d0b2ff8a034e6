//! `grep`: files picked in the sandbox by `grep -F` for the pattern's required literals and only those read, or else one archive of the subtree streamed through a visitor; matched with the shared `CompiledGrep`.
//!
//! When the pattern has a small set of required literals (every matching
//! line holds one, `CompiledGrep::required_literals`) and the image has
//! `find`, `grep` and `tr`, [`pick_files`] runs `grep -lF` in the sandbox
//! (literals as argv elements, never in a script) and only the names of the
//! files holding one come back; the first `limit + 1` of them by path are
//! downloaded and matched here, so the result is this grep's exactly and the
//! content of the rest never crosses the engine's socket. When the sandbox
//! cannot say (no literals, a tool missing, a file it could not read) or the
//! files picked hold too few matches to be certain, the archive walk below
//! answers instead.
//!
//! The engine tars a directory in its own walk order ("a" before "a-b"
//! before "a/x" is not byte order), so matches go through
//! `burrow_backend::Smallest`, which keeps only the first `limit + 1` by
//! (path, line) whatever the order; content is read only for files it will
//! search and whose matches could still be kept; everything else is skipped
//! in the stream.

use std::io::{self, Read};

use burrow_backend::{
    CompiledGrep, ErrorKind, GrepCollector, GrepMatch, GrepResult, Result, Smallest, VPath,
};
use futures::StreamExt;

use crate::archive::{self, Item, ItemKind, Next, Visit};
use crate::exec::records;
use crate::listing::{Found, Place, STAT_CONCURRENCY, relative};
use crate::paths::join;

/// Beneath directory `$1`, prints (each ended by a NUL) every symbolic link,
/// an empty record, every regular file whose name holds a newline, an empty
/// record, then every other regular file holding one of the fixed strings in
/// `$2`, one a line (`grep -lF`: names only; the strings reach `grep` through
/// the environment, so no argument of `find` is one of them). Exits
/// 127 when a tool is missing and 3 when `grep` failed on a file (it could
/// not read it), so the caller knows the names may be incomplete. Regular
/// files only: a FIFO is never opened.
const PICK: &str = r#"command -v find >/dev/null 2>&1 && command -v grep >/dev/null 2>&1 && command -v tr >/dev/null 2>&1 || exit 127
set -o pipefail 2>/dev/null || exit 127
d=$1
export BURROW_PICK="$2"
nl='
'
find "$d" -mindepth 1 -type l -print0 2>/dev/null
printf '\0'
find "$d" -mindepth 1 -type f -name "*$nl*" -print0 2>/dev/null
printf '\0'
find "$d" -mindepth 1 -type f ! -name "*$nl*" -exec sh -c 'grep -lsF -e "$BURROW_PICK" -- "$@"; [ $? -lt 2 ]' burrow-grep {} + 2>/dev/null | tr '\n' '\0' || exit 3
exit 0"#;

/// Searches the text files of a streamed subtree, keeping the first `limit + 1` matches by (path, line).
///
/// Once the collector is full, a file whose path sorts after every kept
/// match is passed by without reading its content.
pub(crate) struct GrepVisit {
    grep: CompiledGrep,
    under: VPath,
    cap: usize,
    max_file_size: u64,
    /// The first matches by (path, line), whatever the walk order.
    pub found: Smallest<GrepMatch>,
    /// Links and hard links to read and search after the walk.
    pub later: Vec<VPath>,
}

impl GrepVisit {
    pub fn new(grep: CompiledGrep, under: VPath, limit: usize, max_file_size: u64) -> Self {
        let cap = limit.saturating_add(1);
        Self {
            grep,
            under,
            cap,
            max_file_size,
            found: Smallest::new(limit),
            later: Vec::new(),
        }
    }

    /// True when matches in `path` could still be kept.
    pub fn wants(&self, path: &VPath) -> bool {
        self.found.would_keep(path.as_str(), 0)
    }

    /// Searches `bytes` of the file `path` and offers its matches.
    pub fn offer(&mut self, path: &VPath, bytes: &[u8]) {
        self.found.extend(search(&self.grep, path, bytes, self.cap));
    }
}

impl Visit for GrepVisit {
    fn visit(&mut self, item: Item, content: &mut dyn Read) -> io::Result<Next> {
        if item.rel.is_empty() || !self.grep.includes(&item.rel) {
            return Ok(Next::Continue);
        }
        let Ok(path) = self.under.join(&item.rel) else {
            return Ok(Next::Continue);
        };
        if !self.wants(&path) {
            return Ok(Next::Continue);
        }
        match item.kind {
            ItemKind::File if item.size <= self.max_file_size => {
                let mut bytes = Vec::with_capacity(usize::try_from(item.size).unwrap_or(0));
                content.read_to_end(&mut bytes)?;
                self.offer(&path, &bytes);
            }
            ItemKind::Symlink | ItemKind::HardLink(_) => self.later.push(path),
            _ => {}
        }
        Ok(Next::Continue)
    }
}

/// At most `limit` matches of `grep` in the file `path` holding `bytes` (none if it is not text).
pub(crate) fn search(
    grep: &CompiledGrep,
    path: &VPath,
    bytes: &[u8],
    limit: usize,
) -> Vec<GrepMatch> {
    let mut collector = GrepCollector::new(limit);
    collector.search(grep, path, bytes);
    collector.finish().matches
}

/// The grep of the directory `dir` (real container path `real`) answered
/// from the files the sandbox picks (see the module docs): a visit holding
/// their matches, with the links beneath `dir` still to read in `later`; or
/// `None` when only the archive walk can answer it.
pub(crate) async fn grep_picked(
    place: &Place<'_>,
    grep: &CompiledGrep,
    dir: &VPath,
    real: &str,
    limit: usize,
    max_file_size: u64,
) -> Result<Option<GrepVisit>> {
    let Some(literals) = grep.required_literals() else {
        return Ok(None);
    };
    let Some(picked) = pick_files(place, grep, dir, real, literals, limit).await? else {
        return Ok(None);
    };
    let mut visit = GrepVisit::new(grep.clone(), dir.clone(), limit, max_file_size);
    let last_held = picked.files.last().map(|f| f.path.clone());
    let contents = futures::stream::iter(picked.files)
        .map(|Found { path, real }| async move {
            let read =
                archive::download_file(place.docker, place.at.id, &real, &path, max_file_size)
                    .await;
            (path, read)
        })
        .buffered(STAT_CONCURRENCY);
    futures::pin_mut!(contents);
    while let Some((path, read)) = contents.next().await {
        if !visit.wants(&path) {
            // The result is certain: this file and every later one sort
            // after the matches held (downloads in flight are dropped).
            break;
        }
        match read {
            Ok(bytes) => visit.offer(&path, &bytes),
            // Grown past the limit or gone since it was picked: passed by,
            // as the archive walk passes such files by.
            Err(e) if matches!(e.kind(), ErrorKind::TooLarge | ErrorKind::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    // Picked files not held sort after every one held: unless the held ones
    // gave limit + 1 matches (the collector is full), those could still place.
    if picked.more && last_held.is_some_and(|last| visit.found.would_keep(last.as_str(), u64::MAX))
    {
        return Ok(None);
    }
    visit.later = picked.links;
    Ok(Some(visit))
}

/// What [`pick_files`] found: the first `limit + 1` picked files by path
/// (sorted), whether more were picked, and every link (to read afterwards).
struct Picked {
    files: Vec<Found>,
    more: bool,
    links: Vec<VPath>,
}

/// Runs [`PICK`] beneath `real`; `None` when its names may be incomplete.
async fn pick_files(
    place: &Place<'_>,
    grep: &CompiledGrep,
    dir: &VPath,
    real: &str,
    literals: &[String],
    limit: usize,
) -> Result<Option<Picked>> {
    let mut argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        PICK.to_owned(),
        "burrow-grep".to_owned(),
        real.to_owned(),
    ];
    // `grep -F` takes several strings as lines of one pattern; none holds a "\n".
    argv.push(literals.join("\n"));
    let mut records = records(place.docker, place.at, argv).await?;
    let mut files = Smallest::new(limit.saturating_add(1));
    let mut links = Vec::new();
    let mut group = 0;
    while let Some(record) = records.next().await? {
        if record.is_empty() {
            group += 1;
            continue;
        }
        let Some(rel) = relative(real, &record) else {
            continue;
        };
        let Ok(path) = dir.join(&rel) else {
            continue;
        };
        if !grep.includes(&rel) {
            continue;
        }
        if group == 0 {
            links.push(path);
        } else if files.would_keep(path.as_str(), 0) {
            let real = join(real, &rel);
            files.push(Found { path, real });
        }
    }
    if records.exit_code(place.docker, place.at.id).await? != 0 || group != 2 {
        return Ok(None);
    }
    let (files, more) = files.finish();
    Ok(Some(Picked { files, more, links }))
}

/// The first matches the visit kept (its limit), and whether more were there.
pub(crate) fn grep_result(found: Smallest<GrepMatch>) -> GrepResult {
    found.into_grep_result()
}
