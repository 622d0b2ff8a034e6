//! Large results: saved to a file in the backend and replaced by a preview and the file's path.

use burrow_backend::{Result, VPath};

use super::render::plural;
use super::session::Fingerprint;
use super::{Call, Toolset};

impl Toolset {
    /// `text` as returned to the model, and whether a file was written for it.
    ///
    /// Text within [`super::ToolConfig::large_result_chars`] is returned as it
    /// is. Longer text is written to `large_results_dir/TOOL-HASH.txt` (named
    /// by its content, so the same result is saved once) and replaced by its
    /// first lines and a sentence giving the path. When the backend refuses
    /// the write (a quota, a read-only mount) the preview says so instead; a
    /// failure is an error.
    pub(crate) async fn spill(
        &self,
        tool: &str,
        text: String,
        call: &Call<'_>,
    ) -> Result<(String, bool)> {
        let total_chars = text.chars().count();
        let threshold = self.config.large_result_chars;
        if total_chars <= threshold {
            return Ok((text, false));
        }
        let preview = preview(&text, self.config.preview_chars);
        let shown_lines = preview.lines().count();
        let total_lines = text.lines().count();
        let name = format!(
            "{tool}-{}.txt",
            Fingerprint::of(text.as_bytes()).short_hex()
        );
        let path = self.config.large_results_dir.join(&name)?;
        let size = format!(
            "{} in {}",
            plural(total_chars, "character", "characters"),
            plural(total_lines, "line", "lines")
        );
        let shown = plural(shown_lines, "line is", "lines are");
        let (note, written) = match self
            .backend
            .write(&call.mutation("write", &path), &path, &text)
            .await
        {
            Ok(_) => {
                self.prune_large_results(&path, call).await?;
                (
                    format!(
                        "[This result was too large to return ({size}; the limit is {threshold} characters). The first {shown} shown above. The full result was saved to {path}: read it with read_file (using offset and limit) or search it with grep.]"
                    ),
                    true,
                )
            }
            Err(e) if e.is_refusal() => (
                format!(
                    "[This result was too large to return ({size}; the limit is {threshold} characters). The first {shown} shown above. The full result could not be saved ({}); narrow the request to see the rest.]",
                    e.message().trim_end_matches('.')
                ),
                false,
            ),
            Err(e) => return Err(e),
        };
        Ok((format!("{preview}\n...\n\n{note}"), written))
    }

    /// Deletes the oldest saved results beyond
    /// [`super::ToolConfig::max_large_results`], never `keep` (the one just
    /// saved). A refusal (a file already gone) is ignored.
    async fn prune_large_results(&self, keep: &VPath, call: &Call<'_>) -> Result<()> {
        let dir = &self.config.large_results_dir;
        let max = self.config.max_large_results.max(1);
        let listing = match self.backend.ls(call.ctx(), dir, max * 4 + 16).await {
            Ok(listing) => listing,
            Err(e) if e.is_refusal() => return Ok(()),
            Err(e) => return Err(e),
        };
        let mut files: Vec<_> = listing
            .entries
            .into_iter()
            .filter(|e| !e.is_dir && e.path != keep.as_str())
            .collect();
        if files.len() < max {
            return Ok(());
        }
        // Oldest first; RFC 3339 times of one clock sort as text.
        files.sort_by(|a, b| a.modified_at.cmp(&b.modified_at).then(a.path.cmp(&b.path)));
        let excess = files.len() + 1 - max;
        for file in &files[..excess] {
            let Ok(path) = VPath::parse(&file.path) else {
                continue;
            };
            match self
                .backend
                .delete(&call.mutation("delete", &path), &path)
                .await
            {
                Ok(()) => {}
                Err(e) if e.is_refusal() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// True when `path` is a saved large result and `under` (where the
    /// agent searches) is not inside the directory they are saved in: such
    /// files are left out of `glob` and `grep`.
    pub(crate) fn hides(&self, under: &VPath, path: &str) -> bool {
        let dir = self.config.large_results_dir.as_str();
        let inside = |p: &str| {
            p.strip_prefix(dir)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        dir != "/" && inside(path) && !inside(under.as_str())
    }
}

/// The first whole lines of `text` within `max_chars` characters (at least
/// part of the first line, cut at a character boundary).
fn preview(text: &str, max_chars: usize) -> &str {
    let cut = text
        .char_indices()
        .nth(max_chars)
        .map_or(text.len(), |(i, _)| i);
    let head = &text[..cut];
    match head.rfind('\n') {
        Some(i) if i > 0 => &head[..i],
        _ => head,
    }
}

#[cfg(test)]
mod tests {
    use super::preview;

    #[test]
    fn previews_whole_lines() {
        assert_eq!(preview("ab\ncd\nef", 7), "ab\ncd");
        assert_eq!(preview("abcdef", 3), "abc");
        assert_eq!(preview("ééé\nx", 2), "éé");
    }
}
