//! The default `delete_tree`: a walk that deletes a tree a page at a time with `ls` and `delete`.

use crate::backend::Backend;
use crate::context::FileContext;
use crate::error::{Error, ErrorKind, Result};
use crate::path::VPath;

/// How many entries one `ls` of the walk asks for: the walk holds at most
/// this many entries per directory on its stack, and the stack is as deep as
/// the tree.
pub(crate) const WALK_PAGE: usize = 1000;

/// Deletes `path` and everything beneath it with `b`'s own `ls` and `delete`.
///
/// Depth first, one page of one directory at a time: files are deleted as
/// they are listed, a directory once it lists empty. A directory that has
/// gone meanwhile (an implicit one, with its last file) is no error, nor is a
/// file deleted meanwhile by someone else. The inner calls carry no effect
/// key: each would otherwise replay the first one's outcome.
pub(crate) async fn delete_tree_by_walk<B: Backend + ?Sized>(
    b: &B,
    ctx: &FileContext,
    path: &VPath,
) -> Result<()> {
    if path.is_root() {
        return Err(Error::root_cannot_be_deleted());
    }
    let inner = FileContext {
        effect_key: None,
        ..ctx.clone()
    };
    match b.delete(&inner, path).await {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => {}
        Err(e) => return Err(e),
    }
    let mut stack = vec![path.clone()];
    while let Some(dir) = stack.last().cloned() {
        let listing = match b.ls(&inner, &dir, WALK_PAGE).await {
            Ok(listing) => listing,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                stack.pop();
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut beneath = None;
        for entry in &listing.entries {
            let child = VPath::parse(&entry.path)
                .map_err(|e| Error::failure("a listing named an entry that is no valid path", e))?;
            if entry.is_dir {
                beneath = Some(child);
                break;
            }
            match b.delete(&inner, &child).await {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(child) = beneath {
            stack.push(child);
            continue;
        }
        if listing.truncated {
            continue;
        }
        match b.delete(&inner, &dir).await {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            // Something was made in it meanwhile: list it again.
            Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => continue,
            Err(e) => return Err(e),
        }
        stack.pop();
    }
    Ok(())
}
