//! `DockerSandbox`: a Docker container as a burrow backend and sandbox, over bollard.
//!
//! # Key design decision: files move as tar through the archive API
//!
//! The obvious way to put a file into a container is a command:
//! `docker exec c sh -c "cat > 'name'"`, or `echo BASE64 | base64 -d > name`,
//! or a Python one-liner. Every such command line is a place where a name or
//! a byte can break: a quote, a newline or a `$` in a path, a NUL in content,
//! a missing `base64` or `python3` in the image, an argument list too long
//! for a big file. The peers this project learnt from each lost files that
//! way.
//!
//! So no file content and no path ever travels on a command line here.
//! Reads and writes use the engine's archive API: a write uploads a tar
//! holding the file (and any missing parent directories) to
//! `PUT /containers/{id}/archive`, a read downloads one from `GET`, and
//! grep streams the tar of a whole subtree through the `tar` crate,
//! reading content only for files it searches. Names and bytes are tar
//! fields, so binaries round-trip byte for byte, any name works, and the
//! image needs nothing but `sh` (for `execute`).
//!
//! Three operations have no archive form: listing one directory and naming
//! the files of a subtree for glob (the archive of a directory is its whole
//! subtree, content included), and deleting. They run as constant `sh`
//! scripts through exec (glob's uses `find`), with the path passed as an
//! argv element (`$1`), never spliced into the script; see ADR 0101.
//!
//! The engine resolves an archive path's symbolic links within the
//! *container's* root, which would let a link in the work dir reach `/etc`.
//! So every path is resolved here first, one component at a time through the
//! archive stat (HEAD) request, and a link whose fully resolved target lies
//! outside the work dir is refused (ADR 0102).
//!
//! # Commands
//!
//! [`Sandbox::execute`](burrow_backend::Sandbox::execute) runs `sh -c
//! COMMAND` in the work dir through exec, stdout and stderr merged inside the
//! container (so interleaved exactly as written), output capped (the rest
//! drained and dropped), and at the timeout the command's whole process group
//! killed from a second exec, since the engine has no exec kill (ADR 0103).
//!
//! # Images and containers
//!
//! A sandbox runs a ready image, or one built from a
//! [`RuntimeConfig`](burrow_types::RuntimeConfig) through the build API
//! ([`dockerfile`], [`runtime_image`]), tagged by a hash of its Dockerfile and
//! reused while the config is unchanged (ADR 0104). Containers start with no
//! network, every capability dropped, `no-new-privileges`, and pids, memory
//! and CPU limits ([`DockerOptions`]); they carry the label
//! `burrow.sandbox=1` and their owner (host, boot, pid, process start time),
//! and are removed on [`DockerSandbox::close`], on drop, by a
//! [`SandboxManager`]'s idle reaper, by [`remove_labelled`], or, when their
//! owner died without removing them (SIGKILL), by [`remove_orphans`], which
//! every sandbox start runs first.

mod archive;
mod backend;
mod dockerfile;
mod engine;
mod exec;
mod image;
mod listing;
mod manager;
mod options;
mod owner;
mod paths;
mod sandbox;
mod search;

pub use bollard::Docker;
pub use dockerfile::{Dockerfile, VENV_PATH, dockerfile};
pub use engine::{connect, connect_to, negotiate};
pub use image::{RuntimeImage, build, ensure_image, image_exists, runtime_image};
pub use manager::{REAP_INTERVAL_BOUNDS, SandboxManager, SandboxSource};
pub use options::{
    CONNECT_TIMEOUT_BOUNDS, DockerOptions, MAX_EXEC_TIMEOUT, MIN_EXEC_TIMEOUT,
    REQUEST_TIMEOUT_BOUNDS, SANDBOX_LABEL, SESSION_LABEL,
};
pub use owner::{
    OWNER_BOOT_LABEL, OWNER_HOST_LABEL, OWNER_PID_LABEL, OWNER_START_LABEL, remove_orphans,
};
pub use sandbox::{DockerSandbox, remove_labelled};
