//! glob and grep across mounts: fan out to every backend involved, filter shadowed results before the limit, merge in path order.
//!
//! # Filling a page
//!
//! A part may return results the composite must hide: the default's files
//! under a mount's prefix, an outer mount's files under a nested mount.
//! Asking each part for `limit` results and filtering afterwards would leave
//! a short page while visible results remain. So each part is asked for
//! `limit + 1` results; when its answer was truncated and fewer than
//! `limit + 1` of them are visible, it is asked again with twice the limit,
//! until it yields `limit + 1` visible results or has no more (the cost is
//! proportional to the shadowed results that sort first, never unbounded).
//! With `limit + 1` visible results (or all of them) from every part, the
//! first `limit` of the merge are exact and `truncated` is exact: true only
//! when more visible results exist.
//!
//! A part that caps its answers below what was asked (its own
//! `max_results`) cannot be paged further; then only the results up to the
//! last one it returned are certain, the page stops there and says
//! `truncated`.

use std::future::Future;

use burrow_backend::{
    CompiledGrep, Error, ErrorKind, FileContext, FileInfo, Glob, GlobResult, GrepQuery, GrepResult,
    Result, VPath,
};
use burrow_types::GrepMatch;
use futures::future::{BoxFuture, try_join_all};

use crate::composite::CompositeBackend;
use crate::rewrite::{ChildPattern, child_pattern};

/// A result that has a place in path order.
trait Ordered {
    fn key(&self) -> (&str, u64);
}

impl Ordered for FileInfo {
    fn key(&self) -> (&str, u64) {
        (&self.path, 0)
    }
}

impl Ordered for GrepMatch {
    fn key(&self) -> (&str, u64) {
        (&self.path, self.line_number)
    }
}

/// The visible results of one part, and how far they are certain when the part could not be paged further.
struct Gathered<T> {
    items: Vec<T>,
    horizon: Option<(String, u64)>,
}

/// Pages one part with growing limits until it has `limit + 1` visible results or no more.
async fn gather<T, F, Fut>(
    limit: usize,
    mut fetch: F,
    visible: impl Fn(&T) -> bool,
) -> Result<Gathered<T>>
where
    T: Ordered,
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, bool)>>,
{
    let want = limit.saturating_add(1);
    let mut ask = want;
    loop {
        let (items, truncated) = fetch(ask).await?;
        let got = items.len();
        let last = items.last().map(|t| {
            let (path, line) = t.key();
            (path.to_owned(), line)
        });
        let kept: Vec<T> = items.into_iter().filter(|t| visible(t)).collect();
        if kept.len() >= want || !truncated {
            return Ok(Gathered {
                items: kept,
                horizon: None,
            });
        }
        if got < ask || ask == usize::MAX {
            return Ok(Gathered {
                items: kept,
                horizon: Some(last.unwrap_or_default()),
            });
        }
        ask = ask.saturating_mul(2);
    }
}

/// The first `limit` results of all parts in path order, and whether more exist.
fn merge<T: Ordered>(parts: Vec<Gathered<T>>, limit: usize) -> (Vec<T>, bool) {
    let horizon = parts.iter().filter_map(|g| g.horizon.clone()).min();
    let mut all: Vec<T> = parts.into_iter().flat_map(|g| g.items).collect();
    if let Some((path, line)) = &horizon {
        all.retain(|t| t.key() <= (path.as_str(), *line));
    }
    all.sort_by(|a, b| a.key().cmp(&b.key()));
    let truncated = horizon.is_some() || all.len() > limit;
    all.truncate(limit);
    (all, truncated)
}

/// `path` (a composite path beneath `under`) relative to `under`, as glob patterns see it.
fn relative<'a>(path: &'a str, under: &VPath) -> &'a str {
    if under.is_root() {
        path.trim_start_matches('/')
    } else {
        path.get(under.as_str().len()..)
            .unwrap_or_default()
            .trim_start_matches('/')
    }
}

/// An owner that has nothing, or only a shadowed file, at `under` contributes nothing.
fn nothing_there(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

pub(crate) async fn glob(
    c: &CompositeBackend,
    ctx: &FileContext,
    pattern: &str,
    under: &VPath,
    limit: usize,
) -> Result<GlobResult> {
    let compiled = Glob::new(pattern)?;
    let state = c.state();
    let table = &state.table;
    let limit = state.caps.limits.results(limit);
    let (owner, owner_under) = table.route(under);
    if !table.has_mount_below(under) {
        // Nothing beneath `under` is mounted elsewhere: one backend answers alone.
        let part = &table.parts[owner];
        let mut result = part
            .backend
            .glob(ctx, pattern, &owner_under, limit)
            .await
            .map_err(|e| part.outer_error(e, &owner_under))?;
        if !part.is_default() {
            result.files = result
                .files
                .into_iter()
                .map(|f| part.outer_info(f))
                .collect();
        }
        return Ok(result);
    }

    let mut jobs: Vec<BoxFuture<'_, Result<Gathered<FileInfo>>>> = Vec::new();
    let owner_under: &VPath = &owner_under;
    jobs.push(Box::pin(async move {
        let part = &table.parts[owner];
        let fetch = |ask: usize| async move {
            match part.backend.glob(ctx, pattern, owner_under, ask).await {
                Ok(r) => Ok((
                    r.files.into_iter().map(|f| part.outer_info(f)).collect(),
                    r.truncated,
                )),
                Err(e) if nothing_there(&e) => Ok((Vec::new(), false)),
                Err(e) => Err(part.outer_error(e, owner_under)),
            }
        };
        gather(limit, fetch, |f: &FileInfo| {
            table.file_visible(owner, &f.path)
        })
        .await
    }));
    for i in table.mounts_below(under) {
        let part = &table.parts[i];
        let rel = relative(part.prefix.as_str(), under);
        let (child, exact) = match child_pattern(pattern, rel) {
            ChildPattern::Skip => continue,
            ChildPattern::Same => (pattern.to_owned(), true),
            ChildPattern::Rewritten(p) => (p, true),
            ChildPattern::Everything => ("**".to_owned(), false),
        };
        let compiled = &compiled;
        jobs.push(Box::pin(async move {
            let root = VPath::root();
            let (child, root) = (&child, &root);
            let fetch = |ask: usize| async move {
                let r = part
                    .backend
                    .glob(ctx, child, root, ask)
                    .await
                    .map_err(|e| part.outer_error(e, root))?;
                Ok((
                    r.files.into_iter().map(|f| part.outer_info(f)).collect(),
                    r.truncated,
                ))
            };
            let visible = |f: &FileInfo| {
                table.file_visible(i, &f.path)
                    && (exact || compiled.is_match(relative(&f.path, under)))
            };
            gather(limit, fetch, visible).await
        }));
    }
    let (files, truncated) = merge(try_join_all(jobs).await?, limit);
    Ok(GlobResult { files, truncated })
}

pub(crate) async fn grep(
    c: &CompositeBackend,
    ctx: &FileContext,
    query: &GrepQuery,
    under: &VPath,
    limit: usize,
) -> Result<GrepResult> {
    let compiled = CompiledGrep::new(query)?;
    let state = c.state();
    let table = &state.table;
    let limit = state.caps.limits.results(limit);
    let (owner, owner_under) = table.route(under);
    if !table.has_mount_below(under) {
        let part = &table.parts[owner];
        let mut result = part
            .backend
            .grep(ctx, query, &owner_under, limit)
            .await
            .map_err(|e| part.outer_error(e, &owner_under))?;
        if !part.is_default() {
            for m in &mut result.matches {
                m.path = part.outer(&m.path);
            }
        }
        return Ok(result);
    }

    let mut jobs: Vec<BoxFuture<'_, Result<Gathered<GrepMatch>>>> = Vec::new();
    let owner_under: &VPath = &owner_under;
    jobs.push(Box::pin(async move {
        let part = &table.parts[owner];
        let fetch = |ask: usize| async move {
            match part.backend.grep(ctx, query, owner_under, ask).await {
                Ok(r) => Ok((reprefix_matches(part, r.matches), r.truncated)),
                Err(e) if nothing_there(&e) => Ok((Vec::new(), false)),
                Err(e) => Err(part.outer_error(e, owner_under)),
            }
        };
        gather(limit, fetch, |m: &GrepMatch| {
            table.file_visible(owner, &m.path)
        })
        .await
    }));
    for i in table.mounts_below(under) {
        let part = &table.parts[i];
        let rel = relative(part.prefix.as_str(), under);
        let (include, exact) = match &query.include {
            None => (None, true),
            Some(include) => match child_pattern(include, rel) {
                ChildPattern::Skip => continue,
                ChildPattern::Same => (Some(include.clone()), true),
                ChildPattern::Rewritten(p) => (Some(p), true),
                ChildPattern::Everything => (None, false),
            },
        };
        let child = GrepQuery {
            include,
            ..query.clone()
        };
        let compiled = &compiled;
        jobs.push(Box::pin(async move {
            let root = VPath::root();
            let (child, root) = (&child, &root);
            let fetch = |ask: usize| async move {
                let r = part
                    .backend
                    .grep(ctx, child, root, ask)
                    .await
                    .map_err(|e| part.outer_error(e, root))?;
                Ok((reprefix_matches(part, r.matches), r.truncated))
            };
            let visible = |m: &GrepMatch| {
                table.file_visible(i, &m.path)
                    && (exact || compiled.includes(relative(&m.path, under)))
            };
            gather(limit, fetch, visible).await
        }));
    }
    let (matches, truncated) = merge(try_join_all(jobs).await?, limit);
    Ok(GrepResult { matches, truncated })
}

fn reprefix_matches(part: &crate::mounts::Part, mut matches: Vec<GrepMatch>) -> Vec<GrepMatch> {
    if !part.is_default() {
        for m in &mut matches {
            m.path = part.outer(&m.path);
        }
    }
    matches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> FileInfo {
        FileInfo {
            name: String::new(),
            path: path.to_owned(),
            is_dir: false,
            size: None,
            modified_at: None,
        }
    }

    #[test]
    fn merge_is_exact_and_respects_a_horizon() {
        let a = Gathered {
            items: vec![file("/a"), file("/c")],
            horizon: None,
        };
        let b = Gathered {
            items: vec![file("/b")],
            horizon: None,
        };
        let (items, truncated) = merge(vec![a, b], 2);
        assert_eq!(
            items.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["/a", "/b"]
        );
        assert!(truncated);
        let a = Gathered {
            items: vec![file("/a"), file("/d")],
            horizon: None,
        };
        let capped = Gathered {
            items: vec![file("/b")],
            horizon: Some(("/c".to_owned(), 0)),
        };
        let (items, truncated) = merge(vec![a, capped], 10);
        assert_eq!(
            items.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["/a", "/b"]
        );
        assert!(truncated);
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative("/m/a", &VPath::root()), "m/a");
        assert_eq!(relative("/d/m/a", &VPath::parse("/d").unwrap()), "m/a");
    }
}
