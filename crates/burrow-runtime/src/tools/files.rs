//! `ls`, `read_file`, `write_file`, `edit_file` and `delete_path`: the file tools, with the read-before-edit guard.

use burrow_backend::text::{apply_edit, line_count, read_window};
use burrow_backend::{Error, ErrorKind, Result, VPath};

use super::args::{DeletePathArgs, EditFileArgs, LsArgs, ReadFileArgs, WriteFileArgs};
use super::render::{cut_line, more_sentence, numbered, plural, with_footer};
use super::session::{Fingerprint, LedgerCheck};
use super::{Call, Outcome, Toolset, is_not_found};

impl Toolset {
    pub(crate) async fn ls(&self, args: LsArgs, call: &Call<'_>) -> Result<Outcome> {
        let dir = VPath::parse(&args.path)?;
        let listing = self
            .backend
            .ls(call.ctx(), &dir, self.config.count_limit.max(1))
            .await?;
        if listing.entries.is_empty() {
            return Ok(Outcome::read(format!("{dir} is an empty directory.")));
        }
        let shown = listing.entries.len().min(self.config.max_entries);
        let lines = listing.entries[..shown]
            .iter()
            .map(|e| match (e.is_dir, e.size) {
                (true, _) => format!("{}/", e.path),
                (false, Some(size)) => {
                    format!("{} ({})", e.path, plural(size as usize, "byte", "bytes"))
                }
                (false, None) => e.path.clone(),
            })
            .collect();
        let footer = more_sentence(
            listing.entries.len() - shown,
            listing.truncated,
            ("entry", "entries"),
            "use glob with a pattern to find specific files",
        );
        Ok(Outcome::read(with_footer(lines, footer)))
    }

    pub(crate) async fn read_file(&self, args: ReadFileArgs, call: &Call<'_>) -> Result<Outcome> {
        let path = VPath::parse(&args.file_path)?;
        let limit = args.limit.unwrap_or(self.config.read_limit);
        if limit == 0 {
            return Err(Error::invalid_argument(format!(
                "the limit must be at least 1; leave it out to read up to {} lines.",
                self.config.read_limit
            )));
        }
        let bytes = match self.backend.read_bytes(call.ctx(), &path).await {
            Ok(bytes) => bytes,
            Err(e) => {
                if is_not_found(&e) {
                    self.session.ledger().forget(&path);
                }
                return Err(e);
            }
        };
        let fingerprint = Fingerprint::of(&bytes);
        let window = match read_window(&path, &bytes, args.offset, limit) {
            Ok(window) => window,
            Err(e) if e.kind() == ErrorKind::NotText => {
                // The agent has seen what the file is, so it may replace it knowingly.
                self.session.ledger().record(&path, fingerprint);
                return Err(Error::refusal(
                    ErrorKind::NotText,
                    format!(
                        "{path} is a binary file ({}), not UTF-8 text, so it cannot be shown as lines.",
                        plural(bytes.len(), "byte", "bytes")
                    ),
                ));
            }
            Err(e) => return Err(e),
        };
        self.session.ledger().record(&path, fingerprint);
        if window.total_lines == 0 {
            return Ok(Outcome::read(format!(
                "{path} exists but is empty (0 lines)."
            )));
        }
        let budget = self.config.large_result_chars;
        let mut used = 0;
        let mut lines = Vec::with_capacity(window.lines.len());
        for (i, line) in window.lines.iter().enumerate() {
            let rendered = numbered(
                window.offset + i + 1,
                &cut_line(line, self.config.max_line_chars),
            );
            let cost = rendered.chars().count() + 1;
            if !lines.is_empty() && used + cost > budget {
                break;
            }
            used += cost;
            lines.push(rendered);
        }
        let end = window.offset + lines.len();
        let footer = (end < window.total_lines).then(|| {
            let capped = if lines.len() < window.lines.len() {
                format!(", output capped at {budget} characters")
            } else {
                String::new()
            };
            format!(
                "(Showing lines {}-{end} of {}{capped}. To read more, call read_file with offset={end}.)",
                window.offset + 1,
                window.total_lines
            )
        });
        Ok(Outcome::read(with_footer(lines, footer)))
    }

    pub(crate) async fn write_file(&self, args: WriteFileArgs, call: &Call<'_>) -> Result<Outcome> {
        let path = VPath::parse(&args.file_path)?;
        let _gate = self.session.mutation_gate().await;
        let existed = match self.backend.read_bytes(call.ctx(), &path).await {
            Ok(bytes) => {
                self.guard(&path, &bytes, "write over it")?;
                true
            }
            Err(e) if is_not_found(&e) => false,
            Err(e) => return Err(e),
        };
        self.backend
            .write(&call.mutation("write", &path), &path, &args.content)
            .await?;
        self.session
            .ledger()
            .record(&path, Fingerprint::of(args.content.as_bytes()));
        let verb = if existed { "Replaced" } else { "Created" };
        let size = if args.content.is_empty() {
            "empty".to_owned()
        } else {
            format!(
                "{}, {}",
                plural(line_count(args.content.as_bytes()), "line", "lines"),
                plural(args.content.len(), "byte", "bytes")
            )
        };
        Ok(Outcome::changed(format!("{verb} {path} ({size}).")))
    }

    pub(crate) async fn edit_file(&self, args: EditFileArgs, call: &Call<'_>) -> Result<Outcome> {
        let path = VPath::parse(&args.file_path)?;
        let _gate = self.session.mutation_gate().await;
        let bytes = self.backend.read_bytes(call.ctx(), &path).await?;
        self.guard(&path, &bytes, "edit it")?;
        // The shared helper computes exactly what the backend will write, so
        // the ledger records the edited bytes without a second read (which
        // could pick up someone else's change as "seen").
        let (edited, _) = apply_edit(
            &path,
            &bytes,
            &args.old_string,
            &args.new_string,
            args.replace_all,
        )?;
        let result = self
            .backend
            .edit(
                &call.mutation("edit", &path),
                &path,
                &args.old_string,
                &args.new_string,
                args.replace_all,
            )
            .await?;
        let seen = if self.backend.capabilities().effect_keys {
            // A durable backend may have replayed an earlier attempt of this
            // call (the file then still holds `bytes`): record what the file
            // holds when it is our own result either way, else nothing
            // (someone else changed it since, and the next change must
            // re-read).
            match self.backend.read_bytes(call.ctx(), &path).await {
                Ok(now) if now == edited || now == bytes => Some(Fingerprint::of(&now)),
                Ok(_) => None,
                Err(e) if e.is_refusal() => None,
                Err(e) => return Err(e),
            }
        } else {
            Some(Fingerprint::of(&edited))
        };
        match seen {
            Some(fingerprint) => self.session.ledger().record(&path, fingerprint),
            None => self.session.ledger().forget(&path),
        }
        let count = result.occurrences.unwrap_or(1) as usize;
        Ok(Outcome::changed(format!(
            "Edited {path}: replaced {}.",
            plural(count, "occurrence", "occurrences")
        )))
    }

    /// Deletes a file or an empty directory, or with `recursive` a whole tree
    /// (`Backend::delete_tree`). No read is needed first: nothing is
    /// overwritten, and what goes is forgotten by the read ledger.
    pub(crate) async fn delete_path(
        &self,
        args: DeletePathArgs,
        call: &Call<'_>,
    ) -> Result<Outcome> {
        let path = VPath::parse(&args.path)?;
        if path.is_root() {
            return Err(Error::refusal(
                ErrorKind::InvalidPath,
                "The workspace root \"/\" cannot be deleted; delete the entries inside it one by one.",
            ));
        }
        let _gate = self.session.mutation_gate().await;
        if args.recursive {
            self.backend
                .delete_tree(&call.mutation("delete_tree", &path), &path)
                .await?;
            self.session.ledger().forget_tree(&path);
            return Ok(Outcome::changed(format!(
                "Deleted {path} and everything beneath it."
            )));
        }
        match self
            .backend
            .delete(&call.mutation("delete", &path), &path)
            .await
        {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => {
                return Err(Error::refusal(
                    ErrorKind::DirectoryNotEmpty,
                    format!(
                        "{path} is a directory that is not empty; call delete_path with recursive set to true to delete it with everything in it, or delete its entries first."
                    ),
                ));
            }
            Err(e) => return Err(e),
        }
        self.session.ledger().forget(&path);
        Ok(Outcome::changed(format!("Deleted {path}.")))
    }

    /// Refuses a change of `path` (holding `bytes`) unless the agent read it and it has not changed since.
    fn guard(&self, path: &VPath, bytes: &[u8], action: &str) -> Result<()> {
        match self.session.ledger().check(path, Fingerprint::of(bytes)) {
            LedgerCheck::Current => Ok(()),
            LedgerCheck::NeverRead => Err(Error::refusal(
                ErrorKind::InvalidArgument,
                format!(
                    "You have not read {path} in this session; call read_file on it first, then {action}."
                ),
            )),
            LedgerCheck::Changed => Err(Error::refusal(
                ErrorKind::Conflict,
                format!(
                    "{path} has changed since you last read it (someone else may have changed it); call read_file on it again, then {action}."
                ),
            )),
        }
    }
}
