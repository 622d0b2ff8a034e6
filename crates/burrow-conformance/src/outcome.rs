//! What a scenario returns (`Outcome`) and the assertion helpers that make a failure say what was expected and what came back.

use std::fmt;
use std::panic::Location;

use burrow_backend::{Error, ErrorKind};

/// How a scenario that did not fail ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pass {
    /// Every assertion held.
    Passed,
    /// The backend lacks a capability the scenario needs; the reason says which.
    Skipped(String),
}

/// The result of one scenario.
pub type Outcome = Result<Pass, ScenarioError>;

/// A scenario's failure: one message saying what was expected and what came
/// back, and the line of the scenario source that found it.
#[derive(Clone, PartialEq, Eq)]
pub struct ScenarioError {
    message: String,
    location: &'static Location<'static>,
}

impl ScenarioError {
    /// A failure with `message`, located at the caller.
    #[track_caller]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            location: Location::caller(),
        }
    }

    /// A failure with `message`, located at `location`.
    pub fn at(message: impl Into<String>, location: &'static Location<'static>) -> Self {
        Self {
            message: message.into(),
            location,
        }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Where in the scenario sources it was found.
    pub fn location(&self) -> &'static Location<'static> {
        self.location
    }

    /// The same failure with `context` put before its message.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Self {
            message: format!("{context}: {}", self.message),
            location: self.location,
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}",
            self.location.file(),
            self.location.line(),
            self.message
        )
    }
}

/// Debug prints like Display, so a failing `#[test]` shows a readable message.
impl fmt::Debug for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ScenarioError {}

/// An unexpected contract error where success was expected (`?` in a scenario).
impl From<Error> for ScenarioError {
    #[track_caller]
    fn from(e: Error) -> Self {
        let what = if e.is_refusal() { "refused" } else { "failed" };
        ScenarioError::new(format!(
            "expected success, but the backend {what} with {}: {:?}",
            e.kind(),
            e.message()
        ))
    }
}

/// A host-side error of a fixture hook (making a symlink, a FIFO).
impl From<std::io::Error> for ScenarioError {
    #[track_caller]
    fn from(e: std::io::Error) -> Self {
        ScenarioError::new(format!("a host operation of the fixture failed: {e}"))
    }
}

/// The scenario passed.
pub fn passed() -> Outcome {
    Ok(Pass::Passed)
}

/// The scenario does not apply to this backend, for `reason`.
pub fn skipped(reason: impl Into<String>) -> Outcome {
    Ok(Pass::Skipped(reason.into()))
}

/// At most this many characters of a value are shown in a failure message.
const SHOW_MAX: usize = 1500;

/// `value` in Debug form, cut to a readable length.
pub fn show<T: fmt::Debug + ?Sized>(value: &T) -> String {
    let full = format!("{value:?}");
    if full.chars().count() <= SHOW_MAX {
        return full;
    }
    let cut: String = full.chars().take(SHOW_MAX).collect();
    format!(
        "{cut}... ({} more characters)",
        full.chars().count() - SHOW_MAX
    )
}

/// The error of `result`, which must be a refusal of `kind`.
#[track_caller]
pub fn expect_kind<T: fmt::Debug>(
    result: Result<T, Error>,
    kind: ErrorKind,
) -> Result<Error, ScenarioError> {
    match result {
        Err(e) if e.kind() == kind => Ok(e),
        Err(e) => Err(ScenarioError::new(format!(
            "expected a {kind} refusal, got {}: {:?}",
            e.kind(),
            e.message()
        ))),
        Ok(v) => Err(ScenarioError::new(format!(
            "expected a {kind} refusal, got success: {}",
            show(&v)
        ))),
    }
}

/// The error of `result`, which must be a refusal (any kind but Failure).
#[track_caller]
pub fn expect_refusal<T: fmt::Debug>(result: Result<T, Error>) -> Result<Error, ScenarioError> {
    match result {
        Err(e) if e.is_refusal() => Ok(e),
        Err(e) => Err(ScenarioError::new(format!(
            "expected a refusal, got a failure: {:?}",
            e.message()
        ))),
        Ok(v) => Err(ScenarioError::new(format!(
            "expected a refusal, got success: {}",
            show(&v)
        ))),
    }
}

/// Fails the scenario with a formatted message unless `cond` holds.
///
/// ```
/// use burrow_conformance::{ScenarioError, ensure};
///
/// fn check(truncated: bool) -> Result<(), ScenarioError> {
///     ensure!(truncated, "ls with limit 4 of 5 entries is truncated");
///     Ok(())
/// }
/// assert_eq!(check(false).unwrap_err().message(), "ls with limit 4 of 5 entries is truncated");
/// ```
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return ::core::result::Result::Err($crate::ScenarioError::new(::std::format!($($fmt)+)).into());
        }
    };
}

/// Fails the scenario unless `got == want`, showing both.
///
/// ```
/// use burrow_conformance::{ScenarioError, ensure_eq};
///
/// fn check(lines: Vec<&str>) -> Result<(), ScenarioError> {
///     ensure_eq!(lines, ["a", "b"], "read of a CRLF file");
///     Ok(())
/// }
/// let err = check(vec!["a\r", "b"]).unwrap_err();
/// assert!(err.message().starts_with("read of a CRLF file:"));
/// assert!(err.message().contains(r#"got: ["a\r", "b"]"#));
/// ```
#[macro_export]
macro_rules! ensure_eq {
    ($got:expr, $want:expr, $($fmt:tt)+) => {
        match (&$got, &$want) {
            (got, want) => {
                if !(*got == *want) {
                    return ::core::result::Result::Err(
                        $crate::ScenarioError::new(::std::format!(
                            "{}:\n   expected: {}\n        got: {}",
                            ::std::format!($($fmt)+),
                            $crate::show(want),
                            $crate::show(got)
                        ))
                        .into(),
                    );
                }
            }
        }
    };
}

/// Fails the scenario with a formatted message.
#[macro_export]
macro_rules! fail {
    ($($fmt:tt)+) => {
        return ::core::result::Result::Err($crate::ScenarioError::new(::std::format!($($fmt)+)).into())
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(n: u32) -> Result<(), ScenarioError> {
        ensure!(n > 1, "n is {n}");
        ensure_eq!(n * 2, 6, "double of {n}");
        Ok(())
    }

    #[test]
    fn macros_report_expected_and_got() {
        assert!(checks(3).is_ok());
        let small = checks(1).unwrap_err();
        assert_eq!(small.message(), "n is 1");
        assert!(small.location().file().ends_with("outcome.rs"));
        let wrong = checks(4).unwrap_err();
        assert!(wrong.message().contains("expected: 6"), "{wrong}");
        assert!(wrong.message().contains("got: 8"), "{wrong}");
    }

    #[test]
    fn kinds_are_checked() {
        let nf: Result<(), Error> = Err(Error::not_found("/x"));
        assert!(expect_kind(nf, ErrorKind::NotFound).is_ok());
        let nf: Result<(), Error> = Err(Error::not_found("/x"));
        let e = expect_kind(nf, ErrorKind::IsADirectory).unwrap_err();
        assert!(e.message().contains("is_a_directory") && e.message().contains("not_found"));
        assert!(
            expect_kind(Ok::<u8, Error>(7), ErrorKind::NotFound)
                .unwrap_err()
                .message()
                .contains('7')
        );
        let failure: Result<(), Error> = Err(Error::failure_msg("disk on fire"));
        assert!(expect_refusal(failure).is_err());
    }

    #[test]
    fn long_values_are_cut() {
        let long = vec![0u8; 10_000];
        assert!(show(&long).len() < 2000);
    }
}
