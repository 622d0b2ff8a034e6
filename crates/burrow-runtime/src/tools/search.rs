//! `glob` and `grep`: capped lists that say how many more there are and how to narrow.

use burrow_backend::{GrepQuery, Result, VPath};

use super::args::{GlobArgs, GrepArgs, OutputMode};
use super::render::{cut_line, more_sentence, plural, with_footer};
use super::{Call, Outcome, Toolset};

const NARROW_GLOB: &str = "use a more specific pattern or a narrower path";
const NARROW_GREP: &str = "narrow the search with path, glob or a more specific pattern";

impl Toolset {
    pub(crate) async fn glob(&self, args: GlobArgs, call: &Call<'_>) -> Result<Outcome> {
        let under = VPath::parse(&args.path)?;
        let mut found = self
            .backend
            .glob(
                call.ctx(),
                &args.pattern,
                &under,
                self.config.count_limit.max(1),
            )
            .await?;
        found.files.retain(|f| !self.hides(&under, &f.path));
        if found.files.is_empty() {
            return Ok(Outcome::read(format!(
                "No files match \"{}\" under {under}.",
                args.pattern
            )));
        }
        let shown = found.files.len().min(self.config.max_entries);
        let lines = found.files[..shown]
            .iter()
            .map(|f| f.path.clone())
            .collect();
        let footer = more_sentence(
            found.files.len() - shown,
            found.truncated,
            ("matching file", "matching files"),
            NARROW_GLOB,
        );
        Ok(Outcome::read(with_footer(lines, footer)))
    }

    pub(crate) async fn grep(&self, args: GrepArgs, call: &Call<'_>) -> Result<Outcome> {
        let under = VPath::parse(&args.path)?;
        let query = GrepQuery {
            pattern: args.pattern.clone(),
            fixed_strings: args.fixed_strings,
            ignore_case: args.ignore_case,
            include: args.glob.clone(),
        };
        let mut found = self
            .backend
            .grep(call.ctx(), &query, &under, self.config.count_limit.max(1))
            .await?;
        found.matches.retain(|m| !self.hides(&under, &m.path));
        if found.matches.is_empty() {
            let filter = match &args.glob {
                Some(g) => format!(" in files matching \"{g}\""),
                None => String::new(),
            };
            return Ok(Outcome::read(format!(
                "No matches for \"{}\" under {under}{filter}.",
                args.pattern
            )));
        }
        // Matches come in path order, so a file's matches are consecutive.
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for m in &found.matches {
            match counts.last_mut() {
                Some((path, n)) if *path == m.path => *n += 1,
                _ => counts.push((&m.path, 1)),
            }
        }
        let cap = self.config.max_entries;
        let text = match args.output_mode {
            OutputMode::FilesWithMatches => {
                let shown = counts.len().min(cap);
                let lines = counts[..shown]
                    .iter()
                    .map(|(p, _)| (*p).to_owned())
                    .collect();
                let footer = more_sentence(
                    counts.len() - shown,
                    found.truncated,
                    ("matching file", "matching files"),
                    NARROW_GREP,
                );
                with_footer(lines, footer)
            }
            OutputMode::Content => {
                let shown = found.matches.len().min(self.config.max_grep_lines);
                let lines = found.matches[..shown]
                    .iter()
                    .map(|m| {
                        format!(
                            "{}:{}:{}",
                            m.path,
                            m.line_number,
                            cut_line(&m.line, self.config.max_line_chars)
                        )
                    })
                    .collect();
                let footer = more_sentence(
                    found.matches.len() - shown,
                    found.truncated,
                    ("matching line", "matching lines"),
                    NARROW_GREP,
                );
                with_footer(lines, footer)
            }
            OutputMode::Count => {
                let shown = counts.len().min(cap);
                let last = counts.len() - 1;
                // The backend stopped counting inside the last file: its
                // tally is a lower bound, and says so.
                let lines = counts[..shown]
                    .iter()
                    .enumerate()
                    .map(|(i, (p, n))| {
                        if found.truncated && i == last {
                            format!("{p}:at least {n}")
                        } else {
                            format!("{p}:{n}")
                        }
                    })
                    .collect();
                let at_least = if found.truncated { "at least " } else { "" };
                let total = format!(
                    "{at_least}{} in {at_least}{}",
                    plural(found.matches.len(), "matching line", "matching lines"),
                    plural(counts.len(), "file", "files")
                );
                let hidden = counts.len() - shown;
                // Where counting stopped, the rest may lie in the last file
                // or in files not reached: say only what is known.
                let more = match (hidden, found.truncated) {
                    (0, false) => None,
                    (0, true) => Some(format!(
                        "(Counting stopped after {}; there may be more; {NARROW_GREP}.)",
                        plural(found.matches.len(), "matching line", "matching lines")
                    )),
                    (n, false) => more_sentence(n, false, ("file", "files"), NARROW_GREP),
                    (n, true) => Some(format!(
                        "(At least {} not shown; {NARROW_GREP}.)",
                        plural(n, "more file is", "more files are")
                    )),
                };
                let footer = match more {
                    Some(more) => format!("Total: {total}. {more}"),
                    None => format!("Total: {total}."),
                };
                with_footer(lines, Some(footer))
            }
        };
        Ok(Outcome::read(text))
    }
}
