//! The archive (tar) API: one file in, one file out, and a whole subtree streamed through a visitor.
//!
//! Content and names travel only inside tar archives over the engine's HTTP
//! API, never on a command line, so no quoting can break them and every byte
//! round-trips.

use std::io::{self, Read};
use std::time::SystemTime;

use bollard::Docker;
use bollard::query_parameters::{
    DownloadFromContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use burrow_backend::{Error, Result, VPath};
use bytes::Bytes;
use futures::StreamExt;
use tar::{EntryType, Header};

use crate::engine;
use crate::paths::{gone, is_no_such_container};

/// Room for tar headers beyond a file's content when downloading one file.
const TAR_OVERHEAD: u64 = 64 * 1024;
/// Chunks of a streamed archive buffered between the engine and the tar reader.
const STREAM_BUFFER: usize = 16;

/// Who owns what the sandbox writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Owner {
    pub uid: u64,
    pub gid: u64,
}

impl Owner {
    /// The owner named by a docker user spec ("uid" or "uid:gid"); root for names or none.
    pub fn from_user(user: Option<&str>) -> Owner {
        let Some(user) = user else {
            return Owner::default();
        };
        let mut parts = user.splitn(2, ':');
        let uid = parts.next().and_then(|u| u.parse().ok()).unwrap_or(0);
        let gid = parts.next().and_then(|g| g.parse().ok()).unwrap_or(uid);
        Owner { uid, gid }
    }
}

/// A tar holding the directories `dirs` (relative, parents first) and, when
/// given, the file `(name, bytes, perm)` (relative), all owned by `owner`.
pub(crate) fn tar_of(
    dirs: &[String],
    file: Option<(&str, &[u8], u32)>,
    owner: Owner,
) -> Result<Vec<u8>> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    // A PAX record keeps the nanoseconds, so modified_at never steps back to the whole second.
    let mtime = format!("{}.{:09}", now.as_secs(), now.subsec_nanos());
    let size = file.map_or(0, |(_, b, _)| b.len());
    let mut builder = tar::Builder::new(Vec::with_capacity(size + 2048));
    let add = |builder: &mut tar::Builder<Vec<u8>>,
               kind: EntryType,
               name: &str,
               data: &[u8],
               mode: u32|
     -> io::Result<()> {
        builder.append_pax_extensions([("mtime", mtime.as_bytes())])?;
        let mut header = Header::new_ustar();
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_uid(owner.uid);
        header.set_gid(owner.gid);
        header.set_mtime(now.as_secs());
        builder.append_data(&mut header, name, data)
    };
    let mut built = || -> io::Result<Vec<u8>> {
        for dir in dirs {
            add(
                &mut builder,
                EntryType::Directory,
                &format!("{dir}/"),
                &[],
                0o755,
            )?;
        }
        if let Some((name, bytes, perm)) = file {
            add(&mut builder, EntryType::Regular, name, bytes, perm)?;
        }
        builder.finish()?;
        Ok(std::mem::take(builder.get_mut()))
    };
    built().map_err(|e| Error::failure("could not build the archive for a write", e))
}

/// Extracts `tar` into the directory `dest` of container `id`, refusing to
/// replace a directory with a file or the reverse.
pub(crate) async fn upload(docker: &Docker, id: &str, dest: &str, tar: Vec<u8>) -> Result<()> {
    let options = UploadToContainerOptionsBuilder::default()
        .path(dest)
        .no_overwrite_dir_non_dir("true")
        .build();
    docker
        .upload_to_container(id, Some(options), bollard::body_full(Bytes::from(tar)))
        .await
        .map_err(|e| {
            if is_no_such_container(&e) {
                gone(e)
            } else {
                engine::failure("write a file into the sandbox", e)
            }
        })
}

/// The content of the regular file at the container path `real`, at most `max` bytes.
///
/// `path` names the file in refusals. A file that turned into something else
/// since it was stat'ed is refused as such.
pub(crate) async fn download_file(
    docker: &Docker,
    id: &str,
    real: &str,
    path: &VPath,
    max: u64,
) -> Result<Vec<u8>> {
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(real)
        .build();
    let mut stream = docker.download_from_container(id, Some(options));
    let mut tar = Vec::new();
    let cap = max.saturating_add(TAR_OVERHEAD);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| match engine::status(&e) {
            Some(404) if is_no_such_container(&e) => gone(e),
            Some(404) => Error::not_found(path),
            _ => engine::failure("read a file from the sandbox", e),
        })?;
        tar.extend_from_slice(&chunk);
        if tar.len() as u64 > cap {
            return Err(Error::too_large(path, tar.len() as u64, max));
        }
    }
    let mut archive = tar::Archive::new(tar.as_slice());
    let broken = |e: io::Error| Error::failure("the engine sent a broken archive for a read", e);
    let mut entries = archive.entries().map_err(broken)?;
    let Some(entry) = entries.next() else {
        return Err(Error::failure_msg(
            "the engine sent an empty archive for a read",
        ));
    };
    let mut entry = entry.map_err(broken)?;
    match entry.header().entry_type() {
        EntryType::Regular | EntryType::Continuous => {}
        EntryType::Directory => return Err(Error::is_a_directory(path)),
        _ => return Err(crate::paths::special(path)),
    }
    let size = entry.header().size().map_err(broken)?;
    burrow_backend::text::check_size(path, size, max)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    entry.read_to_end(&mut bytes).map_err(broken)?;
    Ok(bytes)
}

/// What one entry of a streamed subtree is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ItemKind {
    File,
    Dir,
    Symlink,
    /// A hard link to an earlier entry, named relative to the archive root.
    HardLink(String),
    Other,
}

/// One entry of a streamed subtree.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    /// The path relative to the streamed directory ("" for the directory itself).
    pub rel: String,
    pub kind: ItemKind,
    pub size: u64,
}

/// What a visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Continue,
    Stop,
}

/// A visitor of a streamed subtree: given each entry (names that are not
/// UTF-8 are passed by) and a reader of its content.
pub(crate) trait Visit: Send + 'static {
    fn visit(&mut self, item: Item, content: &mut dyn Read) -> io::Result<Next>;
}

/// Streams the archive of the directory (or file) at the container path
/// `real` through `visitor` on the blocking pool, returning the visitor.
///
/// The tar is read as it arrives, so memory stays at a few chunks whatever
/// the subtree's size; a visitor that stops early closes the stream.
pub(crate) async fn walk<V: Visit>(docker: &Docker, id: &str, real: &str, visitor: V) -> Result<V> {
    let options = DownloadFromContainerOptionsBuilder::default()
        .path(real)
        .build();
    let mut stream = docker.download_from_container(id, Some(options));
    let (tx, rx) = tokio::sync::mpsc::channel::<std::result::Result<Bytes, bollard::errors::Error>>(
        STREAM_BUFFER,
    );
    let pump = tokio::spawn(async move {
        while let Some(chunk) = stream.next().await {
            let stop = chunk.is_err();
            if tx.send(chunk).await.is_err() || stop {
                break;
            }
        }
    });
    let reading = tokio::task::spawn_blocking(move || {
        let mut reader = ChannelReader {
            rx,
            buf: Bytes::new(),
            engine_error: None,
        };
        let mut visitor = visitor;
        let outcome = read_entries(&mut reader, &mut visitor);
        (outcome, visitor, reader.engine_error)
    });
    let joined = reading.await;
    pump.abort();
    let (outcome, visitor, engine_error) = joined
        .map_err(|e| Error::failure("reading an archive from the sandbox did not complete", e))?;
    if let Some(e) = engine_error {
        return Err(if is_no_such_container(&e) {
            gone(e)
        } else {
            engine::failure("stream a directory from the sandbox", e)
        });
    }
    outcome.map_err(|e| Error::failure("the engine sent a broken archive of a directory", e))?;
    Ok(visitor)
}

/// Reads every entry of the tar from `reader` into `visitor`.
fn read_entries<V: Visit>(reader: &mut ChannelReader, visitor: &mut V) -> io::Result<()> {
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path_bytes().into_owned();
        let Ok(name) = String::from_utf8(raw) else {
            continue;
        };
        let header = entry.header();
        let kind = match header.entry_type() {
            EntryType::Regular | EntryType::Continuous => ItemKind::File,
            EntryType::Directory => ItemKind::Dir,
            EntryType::Symlink => ItemKind::Symlink,
            EntryType::Link => match entry.link_name_bytes() {
                Some(target) => match String::from_utf8(target.into_owned()) {
                    Ok(t) => ItemKind::HardLink(relative(&t)),
                    Err(_) => ItemKind::Other,
                },
                None => ItemKind::Other,
            },
            _ => ItemKind::Other,
        };
        let size = if kind == ItemKind::File {
            header.size()?
        } else {
            0
        };
        let item = Item {
            rel: relative(&name),
            kind,
            size,
        };
        if visitor.visit(item, &mut entry)? == Next::Stop {
            break;
        }
    }
    Ok(())
}

/// A tar entry name relative to the archive's root: the first component is
/// the streamed directory itself.
fn relative(name: &str) -> String {
    let name = name.trim_start_matches("./").trim_end_matches('/');
    match name.split_once('/') {
        Some((_, rest)) => rest.to_owned(),
        None => String::new(),
    }
}

/// A blocking `Read` over the chunks a pump task forwards from the engine.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<std::result::Result<Bytes, bollard::errors::Error>>,
    buf: Bytes,
    engine_error: Option<bollard::errors::Error>,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.buf.is_empty() {
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Ok(chunk)) => self.buf = chunk,
                Some(Err(e)) => {
                    self.engine_error = Some(e);
                    return Err(io::Error::other("the engine's archive stream broke"));
                }
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        let _ = self.buf.split_to(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_relative_to_the_root() {
        assert_eq!(relative("workspace"), "");
        assert_eq!(relative("workspace/"), "");
        assert_eq!(relative("workspace/a/b.txt"), "a/b.txt");
        assert_eq!(relative("./x/y"), "y");
    }

    #[test]
    fn owner_from_user_spec() {
        assert_eq!(Owner::from_user(None), Owner { uid: 0, gid: 0 });
        assert_eq!(
            Owner::from_user(Some("1000")),
            Owner {
                uid: 1000,
                gid: 1000
            }
        );
        assert_eq!(
            Owner::from_user(Some("1000:50")),
            Owner { uid: 1000, gid: 50 }
        );
    }

    #[test]
    fn file_tar_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        let long = "n".repeat(200);
        let name = format!("d/e/{long}");
        let tar = tar_of(
            &["d".into(), "d/e".into()],
            Some((&name, &bytes, 0o750)),
            Owner { uid: 7, gid: 8 },
        )
        .unwrap();
        let mut archive = tar::Archive::new(tar.as_slice());
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            seen.push((
                name,
                entry.header().mode().unwrap(),
                entry.header().uid().unwrap(),
                data,
            ));
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0].0, "d/");
        assert_eq!(seen[2].0, format!("d/e/{long}"));
        assert_eq!(seen[2].1, 0o750);
        assert_eq!(seen[2].2, 7);
        assert_eq!(seen[2].3, bytes);
    }
}
