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
///
/// When a part cannot be opened, what was already started (a `docker:`
/// container) is shut down before the error is returned.
pub async fn compose(mut default: Opened, mounts: &[(&str, &Spec)]) -> Result<Opened> {
    let mut builder = CompositeBackend::builder(Arc::clone(&default.backend));
    for (prefix, spec) in mounts {
        let part = match spec.open().await {
            Ok(part) => part,
            Err(e) => {
                // The open error is the one to report; a failed shutdown is secondary.
                let _ = default.closer().close().await;
                return Err(e);
            }
        };
        builder = builder.mount(*prefix, default.adopt(part));
    }
    let composite = match builder.build() {
        Ok(composite) => composite,
        Err(e) => {
            let _ = default.closer().close().await;
            // The prefixes were checked, so this is burrow's bug, not the user's.
            return Err(Error::failure(
                format!("cannot put the mounts together: {}", e.message()),
                e,
            ));
        }
    };
    default.backend = Arc::new(composite);
    Ok(default)
}
