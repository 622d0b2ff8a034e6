//! `PREFIX=SPEC` mounts: several `--backend` flags put together as one `CompositeBackend` (docs/adr/0120).
//!
//! - The default backend is the plain SPEC (or `/=SPEC`), `memory:` when
//!   none is given: every path no mount claims lands there.
//! - Each mount is opened like any spec and mounted at its prefix; the
//!   composite routes each operation to the longest matching prefix, lists
//!   mount points in `ls` of their parent, and searches across mounts.
//! - What a part must save (a `state:FILE.json` mount) is saved after every
//!   successful mutation, whichever mount it went to; a state file whose
//!   document did not change is not rewritten.

use std::sync::Arc;

use burrow::{CompositeBackend, Error, Result};

use crate::spec::{Opened, Spec};

/// `default` with every `(prefix, spec)` of `mounts` mounted over it.
///
/// Prefixes are normalised and distinct (`spec::check` saw to it).
pub async fn compose(mut default: Opened, mounts: &[(&str, &Spec)]) -> Result<Opened> {
    let mut builder = CompositeBackend::builder(Arc::clone(&default.backend));
    for (prefix, spec) in mounts {
        let part = spec.open().await?;
        builder = builder.mount(*prefix, default.adopt(part));
    }
    let composite = builder.build().map_err(|e| {
        // The prefixes were checked, so this is burrow's bug, not the user's.
        Error::failure(
            format!("cannot put the mounts together: {}", e.message()),
            e,
        )
    })?;
    default.backend = Arc::new(composite);
    Ok(default)
}
