//! `execute`: a shell command in a sandbox backend, its output and exit code rendered for the model.

use std::time::Duration;

use burrow_backend::{Error, Result, TIMEOUT_EXIT_CODE};

use super::args::{ExecuteArgs, MAX_TIMEOUT_SECS};
use super::{Call, Outcome, Toolset};

impl Toolset {
    pub(crate) async fn execute(&self, args: ExecuteArgs, call: &Call<'_>) -> Result<Outcome> {
        let Some(sandbox) = self.backend.as_sandbox() else {
            return Err(Error::unsupported("running commands"));
        };
        match args.timeout {
            Some(0) => {
                return Err(Error::invalid_argument(
                    "the timeout must be at least 1 second; leave it out for the default of 120 seconds.",
                ));
            }
            Some(s) if s > MAX_TIMEOUT_SECS => {
                return Err(Error::invalid_argument(format!(
                    "the timeout must be at most {MAX_TIMEOUT_SECS} seconds (7 days)."
                )));
            }
            _ => {}
        }
        let response = sandbox
            .execute(
                call.ctx(),
                &args.command,
                args.timeout.map(Duration::from_secs),
            )
            .await?;
        let mut text = response.output;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if text.is_empty() {
            text.push_str("(no output)\n");
        }
        if response.truncated {
            text.push_str(
                "[Output cut at the cap; redirect the output to a file and read or grep that file to see all of it.]\n",
            );
        }
        match response.exit_code {
            Some(TIMEOUT_EXIT_CODE) => text.push_str(&format!(
                "[exit code {TIMEOUT_EXIT_CODE}: the command was killed at its timeout or exited with 124]"
            )),
            Some(code) => text.push_str(&format!("[exit code {code}]")),
            None => text.push_str("[exit code unknown]"),
        }
        // A command may change any file: the workspace counts as changed.
        Ok(Outcome::changed(text))
    }
}
