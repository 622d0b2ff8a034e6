//! `CompositeBackend`: several burrow backends mounted by path prefix and seen as one file tree.
//!
//! # Key design decision: route by the longest prefix, shadow before the limit
//!
//! A composite is a default backend plus mounts, each a prefix such as
//! "/memories" and the backend whose root appears there. Every operation is
//! **routed to the mount with the longest prefix containing the path** (the
//! default when none does), and that backend sees the path relative to its
//! mount: a mount at "/memories" is asked for "/notes.md" when the caller
//! says "/memories/notes.md", and every path it answers with (listings, glob
//! and grep results, write and edit results, refusal messages) is
//! re-prefixed on the way back. Nested mounts ("/m" and "/m/n") follow from
//! the same rule.
//!
//! The rule has a consequence the naive router gets wrong: **a mount
//! shadows everything beneath its prefix**. Files the default (or an outer
//! mount) holds under "/memories" are invisible to `ls`, `read`, `glob` and
//! `grep`, and no mutation reaches them; deleting the mounted copy never
//! reveals the default's. For single-path operations routing alone does
//! this. For `glob` and `grep` across mounts it does not: the default's
//! answer may be full of shadowed paths, and filtering them out *after* its
//! limit would hand the caller a short page while visible results remain.
//! So the composite **filters shadowed results before the limit**: each part
//! is asked for `limit + 1` results, re-asked with doubling limits while too
//! few of them are visible, and the parts' answers (gathered concurrently)
//! are merged in path order. A page is never short while visible results
//! remain, and `truncated` is true exactly when more visible results exist
//! (see "Filling a page" below).
//!
//! Mount points are directories of the composite, and so is every ancestor
//! of one ("/a" exists when something is mounted at "/a/b"), whatever the
//! default holds there; `ls` of such a directory merges the owner's entries
//! with one directory entry per mount point beneath it.
//!
//! # Filling a page
//!
//! When a part's answer was truncated and fewer than `limit + 1` of its
//! results are visible, it is asked again with twice the limit; the extra
//! cost is proportional to the shadowed results that sort first. A part
//! that caps its answers below what was asked (its own `max_results`)
//! cannot be paged further; the page then stops after the last result that
//! part returned and says `truncated`.
//!
//! A glob pattern (or grep `include`) is relative to `under`; a mount below
//! `under` sees its own root. A pattern with no "/" matches names at any
//! depth and is passed unchanged; a pattern whose leading literal segments
//! spell the mount's position is rewritten relative to the mount ("m/src/*.rs"
//! becomes "/src/*.rs" for a mount at "/m"), or skips the mount when they
//! differ; anything else asks the mount for every file and matches the
//! composite-relative path here.
//!
//! # Other decisions
//!
//! - Capabilities: `exec` holds when `execute` has one place to go; every
//!   other flag holds only when every part has it; limits are the smallest
//!   of all parts.
//! - `execute` goes to the default when it is a sandbox, else to the one
//!   mount that is; with several mounted sandboxes and a default that is
//!   none it is Unsupported, and a mounted sandbox is named with
//!   [`CompositeBackend::execute_in`].
//! - A mounted backend's error about a path ([`burrow_backend::Error::path`])
//!   has that path re-prefixed; only errors without one have their text
//!   rewritten.
//! - Moving a file between mounts is a read, a write and a delete, never
//!   atomic; the contract has no rename.
//! - [`ResolvingBackend`] builds the backend per (tenant, run id) with a
//!   [`BackendResolver`], so one process serves many tenants with different mounts.
//!
//! The decisions are recorded in `docs/adr/0080-composite-routing-and-shadowing.md`
//! and `docs/adr/0081-composite-capabilities-and-resolver.md`.

mod composite;
mod mounts;
mod resolver;
mod rewrite;
mod search;

pub use composite::{CompositeBackend, CompositeBuilder};
pub use resolver::{
    BackendResolver, DEFAULT_RESOLVER_CACHE, Resolved, ResolverFn, ResolvingBackend,
};
